from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.desired_state import DesiredState
from ..models.workspace_status import WorkspaceStatus
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.workspace_sleeping import WorkspaceSleeping





T = TypeVar("T", bound="SleepWorkspaceResponse")



@_attrs_define
class SleepWorkspaceResponse:
    """ A sleep asked for: the workspace drains as for a stop (`desiredState`
    is `stopped`) and sleeps once its runtime is gone with its work saved.

        Attributes:
            desired_state (DesiredState):
            status (WorkspaceStatus):
            workspace_id (str):
            sleeping (None | Unset | WorkspaceSleeping):
     """

    desired_state: DesiredState
    status: WorkspaceStatus
    workspace_id: str
    sleeping: None | Unset | WorkspaceSleeping = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.workspace_sleeping import WorkspaceSleeping # noqa: PLC0415
        desired_state = self.desired_state.value

        status = self.status.value

        workspace_id = self.workspace_id

        sleeping: dict[str, Any] | None | Unset
        if isinstance(self.sleeping, Unset):
            sleeping = UNSET
        elif isinstance(self.sleeping, WorkspaceSleeping):
            sleeping = self.sleeping.to_dict()
        else:
            sleeping = self.sleeping


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "desiredState": desired_state,
            "status": status,
            "workspaceId": workspace_id,
        })
        if sleeping is not UNSET:
            field_dict["sleeping"] = sleeping

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.workspace_sleeping import WorkspaceSleeping # noqa: PLC0415
        d = dict(src_dict)
        desired_state = DesiredState(d.pop("desiredState"))




        status = WorkspaceStatus(d.pop("status"))




        workspace_id = d.pop("workspaceId")

        def _parse_sleeping(data: object) -> None | Unset | WorkspaceSleeping:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                sleeping_type_1 = WorkspaceSleeping.from_dict(data)



                return sleeping_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WorkspaceSleeping, data)

        sleeping = _parse_sleeping(d.pop("sleeping", UNSET))


        sleep_workspace_response = cls(
            desired_state=desired_state,
            status=status,
            workspace_id=workspace_id,
            sleeping=sleeping,
        )


        sleep_workspace_response.additional_properties = d
        return sleep_workspace_response

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
