from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="MkdirRequest")



@_attrs_define
class MkdirRequest:
    """ 
        Attributes:
            owner_user_id (str): The user the workspace belongs to.
            path (str): The directory, relative to the worktree.
            parents (bool | None | Unset): Make the missing directories above it too (an existing one is no error).
     """

    owner_user_id: str
    path: str
    parents: bool | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        owner_user_id = self.owner_user_id

        path = self.path

        parents: bool | None | Unset
        if isinstance(self.parents, Unset):
            parents = UNSET
        else:
            parents = self.parents


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "ownerUserId": owner_user_id,
            "path": path,
        })
        if parents is not UNSET:
            field_dict["parents"] = parents

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        owner_user_id = d.pop("ownerUserId")

        path = d.pop("path")

        def _parse_parents(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        parents = _parse_parents(d.pop("parents", UNSET))


        mkdir_request = cls(
            owner_user_id=owner_user_id,
            path=path,
            parents=parents,
        )

        return mkdir_request

