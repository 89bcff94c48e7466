from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="WarmPoolLevel")



@_attrs_define
class WarmPoolLevel:
    """ One image's warm pool on a worker's host.

        Attributes:
            idle (int): Started and ready to be taken.
            image (str): `repository:tag`.
            starting (int): Started, not ready yet.
            target (int): How many executors it keeps.
     """

    idle: int
    image: str
    starting: int
    target: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        idle = self.idle

        image = self.image

        starting = self.starting

        target = self.target


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "idle": idle,
            "image": image,
            "starting": starting,
            "target": target,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        idle = d.pop("idle")

        image = d.pop("image")

        starting = d.pop("starting")

        target = d.pop("target")

        warm_pool_level = cls(
            idle=idle,
            image=image,
            starting=starting,
            target=target,
        )


        warm_pool_level.additional_properties = d
        return warm_pool_level

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
