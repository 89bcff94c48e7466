from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="OperatorRequest")



@_attrs_define
class OperatorRequest:
    """ Who asks (an operator's name, recorded with what it did).

        Attributes:
            by (str):
     """

    by: str





    def to_dict(self) -> dict[str, Any]:
        by = self.by


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "by": by,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        by = d.pop("by")

        operator_request = cls(
            by=by,
        )

        return operator_request

