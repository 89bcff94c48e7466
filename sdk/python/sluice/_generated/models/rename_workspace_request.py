from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="RenameWorkspaceRequest")



@_attrs_define
class RenameWorkspaceRequest:
    """ 
        Attributes:
            name (str):
            owner_user_id (None | str | Unset):
     """

    name: str
    owner_user_id: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        name = self.name

        owner_user_id: None | str | Unset
        if isinstance(self.owner_user_id, Unset):
            owner_user_id = UNSET
        else:
            owner_user_id = self.owner_user_id


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if owner_user_id is not UNSET:
            field_dict["ownerUserId"] = owner_user_id

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        def _parse_owner_user_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        owner_user_id = _parse_owner_user_id(d.pop("ownerUserId", UNSET))


        rename_workspace_request = cls(
            name=name,
            owner_user_id=owner_user_id,
        )

        return rename_workspace_request

