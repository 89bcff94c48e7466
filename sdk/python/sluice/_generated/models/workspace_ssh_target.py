from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.ssh_target_gateway import SshTargetGateway
  from ..models.ssh_target_runtime import SshTargetRuntime





T = TypeVar("T", bound="WorkspaceSshTarget")



@_attrs_define
class WorkspaceSshTarget:
    """ 
        Attributes:
            attempt_id (str):
            runtime (SshTargetRuntime):
            workspace_id (str):
            gateway (None | SshTargetGateway | Unset):
     """

    attempt_id: str
    runtime: SshTargetRuntime
    workspace_id: str
    gateway: None | SshTargetGateway | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.ssh_target_gateway import SshTargetGateway # noqa: PLC0415
        from ..models.ssh_target_runtime import SshTargetRuntime # noqa: PLC0415
        attempt_id = self.attempt_id

        runtime = self.runtime.to_dict()

        workspace_id = self.workspace_id

        gateway: dict[str, Any] | None | Unset
        if isinstance(self.gateway, Unset):
            gateway = UNSET
        elif isinstance(self.gateway, SshTargetGateway):
            gateway = self.gateway.to_dict()
        else:
            gateway = self.gateway


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "attemptId": attempt_id,
            "runtime": runtime,
            "workspaceId": workspace_id,
        })
        if gateway is not UNSET:
            field_dict["gateway"] = gateway

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.ssh_target_gateway import SshTargetGateway # noqa: PLC0415
        from ..models.ssh_target_runtime import SshTargetRuntime # noqa: PLC0415
        d = dict(src_dict)
        attempt_id = d.pop("attemptId")

        runtime = SshTargetRuntime.from_dict(d.pop("runtime"))




        workspace_id = d.pop("workspaceId")

        def _parse_gateway(data: object) -> None | SshTargetGateway | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                gateway_type_1 = SshTargetGateway.from_dict(data)



                return gateway_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SshTargetGateway | Unset, data)

        gateway = _parse_gateway(d.pop("gateway", UNSET))


        workspace_ssh_target = cls(
            attempt_id=attempt_id,
            runtime=runtime,
            workspace_id=workspace_id,
            gateway=gateway,
        )


        workspace_ssh_target.additional_properties = d
        return workspace_ssh_target

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
