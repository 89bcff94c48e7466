from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="CaptureSummary")



@_attrs_define
class CaptureSummary:
    """ One registered capture.

        Attributes:
            bytes_ (int): The bytes of the files its classes hold.
            classes (list[str]):
            epoch (int):
            launch (str): The launch identity of the executor that registered it.
            n (int):
            registered_at (str):
     """

    bytes_: int
    classes: list[str]
    epoch: int
    launch: str
    n: int
    registered_at: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        bytes_ = self.bytes_

        classes = self.classes



        epoch = self.epoch

        launch = self.launch

        n = self.n

        registered_at = self.registered_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "bytes": bytes_,
            "classes": classes,
            "epoch": epoch,
            "launch": launch,
            "n": n,
            "registeredAt": registered_at,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        bytes_ = d.pop("bytes")

        classes = cast(list[str], d.pop("classes"))


        epoch = d.pop("epoch")

        launch = d.pop("launch")

        n = d.pop("n")

        registered_at = d.pop("registeredAt")

        capture_summary = cls(
            bytes_=bytes_,
            classes=classes,
            epoch=epoch,
            launch=launch,
            n=n,
            registered_at=registered_at,
        )


        capture_summary.additional_properties = d
        return capture_summary

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
