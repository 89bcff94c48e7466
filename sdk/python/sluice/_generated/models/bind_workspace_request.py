from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="BindWorkspaceRequest")



@_attrs_define
class BindWorkspaceRequest:
    """ 
        Attributes:
            owner_user_id (str): The user the workspace belongs to.
            subpath (str):
            mount_path (None | str | Unset):
     """

    owner_user_id: str
    subpath: str
    mount_path: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        owner_user_id = self.owner_user_id

        subpath = self.subpath

        mount_path: None | str | Unset
        if isinstance(self.mount_path, Unset):
            mount_path = UNSET
        else:
            mount_path = self.mount_path


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "ownerUserId": owner_user_id,
            "subpath": subpath,
        })
        if mount_path is not UNSET:
            field_dict["mountPath"] = mount_path

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        owner_user_id = d.pop("ownerUserId")

        subpath = d.pop("subpath")

        def _parse_mount_path(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        mount_path = _parse_mount_path(d.pop("mountPath", UNSET))


        bind_workspace_request = cls(
            owner_user_id=owner_user_id,
            subpath=subpath,
            mount_path=mount_path,
        )

        return bind_workspace_request

