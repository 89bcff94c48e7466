from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="CaptureDrainExecutor")



@_attrs_define
class CaptureDrainExecutor:
    """ 
        Attributes:
            adapter (str):
            resource_id (str):
            run_id (str):
            launch_id (None | str | Unset):
            reference (None | str | Unset):
     """

    adapter: str
    resource_id: str
    run_id: str
    launch_id: None | str | Unset = UNSET
    reference: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        adapter = self.adapter

        resource_id = self.resource_id

        run_id = self.run_id

        launch_id: None | str | Unset
        if isinstance(self.launch_id, Unset):
            launch_id = UNSET
        else:
            launch_id = self.launch_id

        reference: None | str | Unset
        if isinstance(self.reference, Unset):
            reference = UNSET
        else:
            reference = self.reference


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "adapter": adapter,
            "resourceId": resource_id,
            "runId": run_id,
        })
        if launch_id is not UNSET:
            field_dict["launchId"] = launch_id
        if reference is not UNSET:
            field_dict["reference"] = reference

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        adapter = d.pop("adapter")

        resource_id = d.pop("resourceId")

        run_id = d.pop("runId")

        def _parse_launch_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        launch_id = _parse_launch_id(d.pop("launchId", UNSET))


        def _parse_reference(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reference = _parse_reference(d.pop("reference", UNSET))


        capture_drain_executor = cls(
            adapter=adapter,
            resource_id=resource_id,
            run_id=run_id,
            launch_id=launch_id,
            reference=reference,
        )


        capture_drain_executor.additional_properties = d
        return capture_drain_executor

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
