from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="CaptureOverdue")



@_attrs_define
class CaptureOverdue:
    """ A capture step running past its bound.

        Attributes:
            bound_ms (int):
            running_ms (int):
            started_unix_ms (int):
            step (str): Outermost first, `›`-separated.
     """

    bound_ms: int
    running_ms: int
    started_unix_ms: int
    step: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        bound_ms = self.bound_ms

        running_ms = self.running_ms

        started_unix_ms = self.started_unix_ms

        step = self.step


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "boundMs": bound_ms,
            "runningMs": running_ms,
            "startedUnixMs": started_unix_ms,
            "step": step,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        bound_ms = d.pop("boundMs")

        running_ms = d.pop("runningMs")

        started_unix_ms = d.pop("startedUnixMs")

        step = d.pop("step")

        capture_overdue = cls(
            bound_ms=bound_ms,
            running_ms=running_ms,
            started_unix_ms=started_unix_ms,
            step=step,
        )


        capture_overdue.additional_properties = d
        return capture_overdue

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
