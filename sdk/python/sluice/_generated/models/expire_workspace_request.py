from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ExpireWorkspaceRequest")



@_attrs_define
class ExpireWorkspaceRequest:
    """ 
        Attributes:
            owner_user_id (str): The user the workspace belongs to.
            ttl_seconds (int | None | Unset): Seconds from now; `null` clears the TTL; omitted expires now.
     """

    owner_user_id: str
    ttl_seconds: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        owner_user_id = self.owner_user_id

        ttl_seconds: int | None | Unset
        if isinstance(self.ttl_seconds, Unset):
            ttl_seconds = UNSET
        else:
            ttl_seconds = self.ttl_seconds


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "ownerUserId": owner_user_id,
        })
        if ttl_seconds is not UNSET:
            field_dict["ttlSeconds"] = ttl_seconds

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        owner_user_id = d.pop("ownerUserId")

        def _parse_ttl_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        ttl_seconds = _parse_ttl_seconds(d.pop("ttlSeconds", UNSET))


        expire_workspace_request = cls(
            owner_user_id=owner_user_id,
            ttl_seconds=ttl_seconds,
        )

        return expire_workspace_request

