from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="CreatePreviewRequest")



@_attrs_define
class CreatePreviewRequest:
    """ A preview of one of the workspace's ports.

        Attributes:
            port (int): The port inside the workspace (1 to 65535).
            owner_user_id (None | str | Unset):
            public (bool | Unset): Anyone may visit the preview, without a token (default false).
            ttl_seconds (int | None | Unset): How long the grant lasts: 60 to 604800 seconds (default 3600).
     """

    port: int
    owner_user_id: None | str | Unset = UNSET
    public: bool | Unset = UNSET
    ttl_seconds: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        port = self.port

        owner_user_id: None | str | Unset
        if isinstance(self.owner_user_id, Unset):
            owner_user_id = UNSET
        else:
            owner_user_id = self.owner_user_id

        public = self.public

        ttl_seconds: int | None | Unset
        if isinstance(self.ttl_seconds, Unset):
            ttl_seconds = UNSET
        else:
            ttl_seconds = self.ttl_seconds


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "port": port,
        })
        if owner_user_id is not UNSET:
            field_dict["ownerUserId"] = owner_user_id
        if public is not UNSET:
            field_dict["public"] = public
        if ttl_seconds is not UNSET:
            field_dict["ttlSeconds"] = ttl_seconds

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        port = d.pop("port")

        def _parse_owner_user_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        owner_user_id = _parse_owner_user_id(d.pop("ownerUserId", UNSET))


        public = d.pop("public", UNSET)

        def _parse_ttl_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        ttl_seconds = _parse_ttl_seconds(d.pop("ttlSeconds", UNSET))


        create_preview_request = cls(
            port=port,
            owner_user_id=owner_user_id,
            public=public,
            ttl_seconds=ttl_seconds,
        )

        return create_preview_request

