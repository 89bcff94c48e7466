from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="GatewaySessionRecord")



@_attrs_define
class GatewaySessionRecord:
    """ An SSH session a gateway opened into the workspace: who, what kind,
    when and how it ended (never what went through it).

        Attributes:
            attempt_id (str):
            ended_at (None | str):
            exit_status (int | None): The exit status of its shell or command (128 + n after signal n).
            key_fingerprint (None | str): The SHA256 fingerprint of the key the user signed in with.
            kind (str): `shell`, `exec`, `sftp` or `port-forward`.
            outcome (None | str): `exited`, `refused` or `cut` (the gateway or the executor went away).
            principal (str):
            session_id (str):
            started_at (str):
     """

    attempt_id: str
    ended_at: None | str
    exit_status: int | None
    key_fingerprint: None | str
    kind: str
    outcome: None | str
    principal: str
    session_id: str
    started_at: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        attempt_id = self.attempt_id

        ended_at: None | str
        ended_at = self.ended_at

        exit_status: int | None
        exit_status = self.exit_status

        key_fingerprint: None | str
        key_fingerprint = self.key_fingerprint

        kind = self.kind

        outcome: None | str
        outcome = self.outcome

        principal = self.principal

        session_id = self.session_id

        started_at = self.started_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "attemptId": attempt_id,
            "endedAt": ended_at,
            "exitStatus": exit_status,
            "keyFingerprint": key_fingerprint,
            "kind": kind,
            "outcome": outcome,
            "principal": principal,
            "sessionId": session_id,
            "startedAt": started_at,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attempt_id = d.pop("attemptId")

        def _parse_ended_at(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        ended_at = _parse_ended_at(d.pop("endedAt"))


        def _parse_exit_status(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        exit_status = _parse_exit_status(d.pop("exitStatus"))


        def _parse_key_fingerprint(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        key_fingerprint = _parse_key_fingerprint(d.pop("keyFingerprint"))


        kind = d.pop("kind")

        def _parse_outcome(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        outcome = _parse_outcome(d.pop("outcome"))


        principal = d.pop("principal")

        session_id = d.pop("sessionId")

        started_at = d.pop("startedAt")

        gateway_session_record = cls(
            attempt_id=attempt_id,
            ended_at=ended_at,
            exit_status=exit_status,
            key_fingerprint=key_fingerprint,
            kind=kind,
            outcome=outcome,
            principal=principal,
            session_id=session_id,
            started_at=started_at,
        )


        gateway_session_record.additional_properties = d
        return gateway_session_record

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
