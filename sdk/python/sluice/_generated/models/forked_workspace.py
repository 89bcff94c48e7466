from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.workspace_status import WorkspaceStatus






T = TypeVar("T", bound="ForkedWorkspace")



@_attrs_define
class ForkedWorkspace:
    """ 
        Attributes:
            capture_session_id (str):
            capture_token (str): The new session's token, shown this once.
            name (str):
            status (WorkspaceStatus):
            workspace_id (str):
     """

    capture_session_id: str
    capture_token: str
    name: str
    status: WorkspaceStatus
    workspace_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        capture_session_id = self.capture_session_id

        capture_token = self.capture_token

        name = self.name

        status = self.status.value

        workspace_id = self.workspace_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "captureSessionId": capture_session_id,
            "captureToken": capture_token,
            "name": name,
            "status": status,
            "workspaceId": workspace_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        capture_session_id = d.pop("captureSessionId")

        capture_token = d.pop("captureToken")

        name = d.pop("name")

        status = WorkspaceStatus(d.pop("status"))




        workspace_id = d.pop("workspaceId")

        forked_workspace = cls(
            capture_session_id=capture_session_id,
            capture_token=capture_token,
            name=name,
            status=status,
            workspace_id=workspace_id,
        )


        forked_workspace.additional_properties = d
        return forked_workspace

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
