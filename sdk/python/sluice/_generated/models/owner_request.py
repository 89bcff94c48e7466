from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="OwnerRequest")



@_attrs_define
class OwnerRequest:
    """ 
        Attributes:
            owner_user_id (str): The user the workspace belongs to.
     """

    owner_user_id: str





    def to_dict(self) -> dict[str, Any]:
        owner_user_id = self.owner_user_id


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "ownerUserId": owner_user_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        owner_user_id = d.pop("ownerUserId")

        owner_request = cls(
            owner_user_id=owner_user_id,
        )

        return owner_request

