from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="RemoveFileRequest")



@_attrs_define
class RemoveFileRequest:
    """ 
        Attributes:
            owner_user_id (str): The user the workspace belongs to.
            path (str):
            recursive (bool | None | Unset): Remove a directory and all it holds.
     """

    owner_user_id: str
    path: str
    recursive: bool | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        owner_user_id = self.owner_user_id

        path = self.path

        recursive: bool | None | Unset
        if isinstance(self.recursive, Unset):
            recursive = UNSET
        else:
            recursive = self.recursive


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "ownerUserId": owner_user_id,
            "path": path,
        })
        if recursive is not UNSET:
            field_dict["recursive"] = recursive

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        owner_user_id = d.pop("ownerUserId")

        path = d.pop("path")

        def _parse_recursive(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        recursive = _parse_recursive(d.pop("recursive", UNSET))


        remove_file_request = cls(
            owner_user_id=owner_user_id,
            path=path,
            recursive=recursive,
        )

        return remove_file_request

