from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.workspace_bind import WorkspaceBind





T = TypeVar("T", bound="WorkspaceBinds")



@_attrs_define
class WorkspaceBinds:
    """ 
        Attributes:
            binds (list[WorkspaceBind]):
     """

    binds: list[WorkspaceBind]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.workspace_bind import WorkspaceBind # noqa: PLC0415
        binds = []
        for binds_item_data in self.binds:
            binds_item = binds_item_data.to_dict()
            binds.append(binds_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "binds": binds,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.workspace_bind import WorkspaceBind # noqa: PLC0415
        d = dict(src_dict)
        binds = []
        _binds = d.pop("binds")
        for binds_item_data in (_binds):
            binds_item = WorkspaceBind.from_dict(binds_item_data)



            binds.append(binds_item)


        workspace_binds = cls(
            binds=binds,
        )


        workspace_binds.additional_properties = d
        return workspace_binds

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
