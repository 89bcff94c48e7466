from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.capture_class import CaptureClass
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="CaptureClassSnaps")



@_attrs_define
class CaptureClassSnaps:
    """ One class's snaps since the daemon started.

        Attributes:
            class_ (CaptureClass): The two capture classes.
            snaps_failed (int):
            last_snap_error (None | str | Unset):
            snap_failing_since_unix_ms (int | None | Unset):
     """

    class_: CaptureClass
    snaps_failed: int
    last_snap_error: None | str | Unset = UNSET
    snap_failing_since_unix_ms: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        class_ = self.class_.value

        snaps_failed = self.snaps_failed

        last_snap_error: None | str | Unset
        if isinstance(self.last_snap_error, Unset):
            last_snap_error = UNSET
        else:
            last_snap_error = self.last_snap_error

        snap_failing_since_unix_ms: int | None | Unset
        if isinstance(self.snap_failing_since_unix_ms, Unset):
            snap_failing_since_unix_ms = UNSET
        else:
            snap_failing_since_unix_ms = self.snap_failing_since_unix_ms


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "class": class_,
            "snapsFailed": snaps_failed,
        })
        if last_snap_error is not UNSET:
            field_dict["lastSnapError"] = last_snap_error
        if snap_failing_since_unix_ms is not UNSET:
            field_dict["snapFailingSinceUnixMs"] = snap_failing_since_unix_ms

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        class_ = CaptureClass(d.pop("class"))




        snaps_failed = d.pop("snapsFailed")

        def _parse_last_snap_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_snap_error = _parse_last_snap_error(d.pop("lastSnapError", UNSET))


        def _parse_snap_failing_since_unix_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        snap_failing_since_unix_ms = _parse_snap_failing_since_unix_ms(d.pop("snapFailingSinceUnixMs", UNSET))


        capture_class_snaps = cls(
            class_=class_,
            snaps_failed=snaps_failed,
            last_snap_error=last_snap_error,
            snap_failing_since_unix_ms=snap_failing_since_unix_ms,
        )


        capture_class_snaps.additional_properties = d
        return capture_class_snaps

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
