from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.runtime_adapter import RuntimeAdapter
from ..models.runtime_status import RuntimeStatus






T = TypeVar("T", bound="SshTargetRuntime")



@_attrs_define
class SshTargetRuntime:
    """ 
        Attributes:
            adapter (RuntimeAdapter):
            endpoint (str):
            reference (str):
            resource_id (str):
            status (RuntimeStatus):
     """

    adapter: RuntimeAdapter
    endpoint: str
    reference: str
    resource_id: str
    status: RuntimeStatus
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        adapter = self.adapter.value

        endpoint = self.endpoint

        reference = self.reference

        resource_id = self.resource_id

        status = self.status.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "adapter": adapter,
            "endpoint": endpoint,
            "reference": reference,
            "resourceId": resource_id,
            "status": status,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        adapter = RuntimeAdapter(d.pop("adapter"))




        endpoint = d.pop("endpoint")

        reference = d.pop("reference")

        resource_id = d.pop("resourceId")

        status = RuntimeStatus(d.pop("status"))




        ssh_target_runtime = cls(
            adapter=adapter,
            endpoint=endpoint,
            reference=reference,
            resource_id=resource_id,
            status=status,
        )


        ssh_target_runtime.additional_properties = d
        return ssh_target_runtime

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
