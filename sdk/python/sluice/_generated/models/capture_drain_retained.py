from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="CaptureDrainRetained")



@_attrs_define
class CaptureDrainRetained:
    """ 
        Attributes:
            reason (str):
            recoverable (bool):
            recovery_attempts (int):
            since (str):
            last_recovery_error (None | str | Unset):
            next_recovery_at (None | str | Unset):
     """

    reason: str
    recoverable: bool
    recovery_attempts: int
    since: str
    last_recovery_error: None | str | Unset = UNSET
    next_recovery_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        reason = self.reason

        recoverable = self.recoverable

        recovery_attempts = self.recovery_attempts

        since = self.since

        last_recovery_error: None | str | Unset
        if isinstance(self.last_recovery_error, Unset):
            last_recovery_error = UNSET
        else:
            last_recovery_error = self.last_recovery_error

        next_recovery_at: None | str | Unset
        if isinstance(self.next_recovery_at, Unset):
            next_recovery_at = UNSET
        else:
            next_recovery_at = self.next_recovery_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "reason": reason,
            "recoverable": recoverable,
            "recoveryAttempts": recovery_attempts,
            "since": since,
        })
        if last_recovery_error is not UNSET:
            field_dict["lastRecoveryError"] = last_recovery_error
        if next_recovery_at is not UNSET:
            field_dict["nextRecoveryAt"] = next_recovery_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        reason = d.pop("reason")

        recoverable = d.pop("recoverable")

        recovery_attempts = d.pop("recoveryAttempts")

        since = d.pop("since")

        def _parse_last_recovery_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_recovery_error = _parse_last_recovery_error(d.pop("lastRecoveryError", UNSET))


        def _parse_next_recovery_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        next_recovery_at = _parse_next_recovery_at(d.pop("nextRecoveryAt", UNSET))


        capture_drain_retained = cls(
            reason=reason,
            recoverable=recoverable,
            recovery_attempts=recovery_attempts,
            since=since,
            last_recovery_error=last_recovery_error,
            next_recovery_at=next_recovery_at,
        )


        capture_drain_retained.additional_properties = d
        return capture_drain_retained

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
