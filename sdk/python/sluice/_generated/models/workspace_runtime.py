from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.runtime_adapter import RuntimeAdapter
from ..models.runtime_status import RuntimeStatus
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="WorkspaceRuntime")



@_attrs_define
class WorkspaceRuntime:
    """ 
        Attributes:
            adapter (RuntimeAdapter):
            deadline (None | str): When the runtime itself ends the executor; `null` where it imposes no lifetime.
            reference (str):
            resource_id (str):
            status (RuntimeStatus):
            endpoint (None | str | Unset):
            launch_id (None | str | Unset):
            run_id (None | str | Unset):
     """

    adapter: RuntimeAdapter
    deadline: None | str
    reference: str
    resource_id: str
    status: RuntimeStatus
    endpoint: None | str | Unset = UNSET
    launch_id: None | str | Unset = UNSET
    run_id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        adapter = self.adapter.value

        deadline: None | str
        deadline = self.deadline

        reference = self.reference

        resource_id = self.resource_id

        status = self.status.value

        endpoint: None | str | Unset
        if isinstance(self.endpoint, Unset):
            endpoint = UNSET
        else:
            endpoint = self.endpoint

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


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "adapter": adapter,
            "deadline": deadline,
            "reference": reference,
            "resourceId": resource_id,
            "status": status,
        })
        if endpoint is not UNSET:
            field_dict["endpoint"] = endpoint
        if launch_id is not UNSET:
            field_dict["launchId"] = launch_id
        if run_id is not UNSET:
            field_dict["runId"] = run_id

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        adapter = RuntimeAdapter(d.pop("adapter"))




        def _parse_deadline(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        deadline = _parse_deadline(d.pop("deadline"))


        reference = d.pop("reference")

        resource_id = d.pop("resourceId")

        status = RuntimeStatus(d.pop("status"))




        def _parse_endpoint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        endpoint = _parse_endpoint(d.pop("endpoint", UNSET))


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


        workspace_runtime = cls(
            adapter=adapter,
            deadline=deadline,
            reference=reference,
            resource_id=resource_id,
            status=status,
            endpoint=endpoint,
            launch_id=launch_id,
            run_id=run_id,
        )


        workspace_runtime.additional_properties = d
        return workspace_runtime

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
