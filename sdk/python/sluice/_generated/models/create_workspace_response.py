from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.workspace_status import WorkspaceStatus
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.workspace_runtime import WorkspaceRuntime





T = TypeVar("T", bound="CreateWorkspaceResponse")



@_attrs_define
class CreateWorkspaceResponse:
    """ 
        Attributes:
            name (str):
            registry_id (str):
            replayed (bool): `true` when an earlier create with the same key made this workspace.
            repository (str):
            status (WorkspaceStatus):
            tag (str):
            workspace_id (str):
            launch_id (None | str | Unset):
            run_id (None | str | Unset):
            runtime (None | Unset | WorkspaceRuntime):
     """

    name: str
    registry_id: str
    replayed: bool
    repository: str
    status: WorkspaceStatus
    tag: str
    workspace_id: str
    launch_id: None | str | Unset = UNSET
    run_id: None | str | Unset = UNSET
    runtime: None | Unset | WorkspaceRuntime = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.workspace_runtime import WorkspaceRuntime # noqa: PLC0415
        name = self.name

        registry_id = self.registry_id

        replayed = self.replayed

        repository = self.repository

        status = self.status.value

        tag = self.tag

        workspace_id = self.workspace_id

        launch_id: None | str | Unset
        if isinstance(self.launch_id, Unset):
            launch_id = UNSET
        else:
            launch_id = self.launch_id

        run_id: None | str | Unset
        if isinstance(self.run_id, Unset):
            run_id = UNSET
        else:
            run_id = self.run_id

        runtime: dict[str, Any] | None | Unset
        if isinstance(self.runtime, Unset):
            runtime = UNSET
        elif isinstance(self.runtime, WorkspaceRuntime):
            runtime = self.runtime.to_dict()
        else:
            runtime = self.runtime


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
            "registryId": registry_id,
            "replayed": replayed,
            "repository": repository,
            "status": status,
            "tag": tag,
            "workspaceId": workspace_id,
        })
        if launch_id is not UNSET:
            field_dict["launchId"] = launch_id
        if run_id is not UNSET:
            field_dict["runId"] = run_id
        if runtime is not UNSET:
            field_dict["runtime"] = runtime

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.workspace_runtime import WorkspaceRuntime # noqa: PLC0415
        d = dict(src_dict)
        name = d.pop("name")

        registry_id = d.pop("registryId")

        replayed = d.pop("replayed")

        repository = d.pop("repository")

        status = WorkspaceStatus(d.pop("status"))




        tag = d.pop("tag")

        workspace_id = d.pop("workspaceId")

        def _parse_launch_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        launch_id = _parse_launch_id(d.pop("launchId", UNSET))


        def _parse_run_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        run_id = _parse_run_id(d.pop("runId", UNSET))


        def _parse_runtime(data: object) -> None | Unset | WorkspaceRuntime:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                runtime_type_1 = WorkspaceRuntime.from_dict(data)



                return runtime_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WorkspaceRuntime, data)

        runtime = _parse_runtime(d.pop("runtime", UNSET))


        create_workspace_response = cls(
            name=name,
            registry_id=registry_id,
            replayed=replayed,
            repository=repository,
            status=status,
            tag=tag,
            workspace_id=workspace_id,
            launch_id=launch_id,
            run_id=run_id,
            runtime=runtime,
        )


        create_workspace_response.additional_properties = d
        return create_workspace_response

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
