from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.workspace_status import WorkspaceStatus






T = TypeVar("T", bound="WakeWorkspaceResponse")



@_attrs_define
class WakeWorkspaceResponse:
    """ A wake: `woken` when this call woke it (a new run, relation `resume`,
    restores its capture session's head), else it was awake already.

        Attributes:
            run_id (str):
            status (WorkspaceStatus):
            woken (bool):
            workspace_id (str):
     """

    run_id: str
    status: WorkspaceStatus
    woken: bool
    workspace_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        run_id = self.run_id

        status = self.status.value

        woken = self.woken

        workspace_id = self.workspace_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "runId": run_id,
            "status": status,
            "woken": woken,
            "workspaceId": workspace_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        run_id = d.pop("runId")

        status = WorkspaceStatus(d.pop("status"))




        woken = d.pop("woken")

        workspace_id = d.pop("workspaceId")

        wake_workspace_response = cls(
            run_id=run_id,
            status=status,
            woken=woken,
            workspace_id=workspace_id,
        )


        wake_workspace_response.additional_properties = d
        return wake_workspace_response

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
