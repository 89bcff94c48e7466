from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.workspace_capture_drain import WorkspaceCaptureDrain





T = TypeVar("T", bound="RetainedExecutor")



@_attrs_define
class RetainedExecutor:
    """ A retained executor, for operators.

        Attributes:
            capture_drain (WorkspaceCaptureDrain): What the control plane last observed of a capture-sourced workspace's
                drain: until the runtime is gone, this is what is happening.
            owner_user_id (str):
            run_id (str):
            workspace_id (str):
     """

    capture_drain: WorkspaceCaptureDrain
    owner_user_id: str
    run_id: str
    workspace_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.workspace_capture_drain import WorkspaceCaptureDrain # noqa: PLC0415
        capture_drain = self.capture_drain.to_dict()

        owner_user_id = self.owner_user_id

        run_id = self.run_id

        workspace_id = self.workspace_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "captureDrain": capture_drain,
            "ownerUserId": owner_user_id,
            "runId": run_id,
            "workspaceId": workspace_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.workspace_capture_drain import WorkspaceCaptureDrain # noqa: PLC0415
        d = dict(src_dict)
        capture_drain = WorkspaceCaptureDrain.from_dict(d.pop("captureDrain"))




        owner_user_id = d.pop("ownerUserId")

        run_id = d.pop("runId")

        workspace_id = d.pop("workspaceId")

        retained_executor = cls(
            capture_drain=capture_drain,
            owner_user_id=owner_user_id,
            run_id=run_id,
            workspace_id=workspace_id,
        )


        retained_executor.additional_properties = d
        return retained_executor

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
