from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="CreateCaptureSessionResponse")



@_attrs_define
class CreateCaptureSessionResponse:
    """ A new session. The token is shown here once and never again.

        Attributes:
            session_id (str):
            token (str): Give it to a capture-sourced create as `captureToken`.
            worktree_id (str):
     """

    session_id: str
    token: str
    worktree_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        session_id = self.session_id

        token = self.token

        worktree_id = self.worktree_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "sessionId": session_id,
            "token": token,
            "worktreeId": worktree_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        session_id = d.pop("sessionId")

        token = d.pop("token")

        worktree_id = d.pop("worktreeId")

        create_capture_session_response = cls(
            session_id=session_id,
            token=token,
            worktree_id=worktree_id,
        )


        create_capture_session_response.additional_properties = d
        return create_capture_session_response

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
