from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="PreviewRecord")



@_attrs_define
class PreviewRecord:
    """ A preview grant.

        Attributes:
            attempt_id (str): The run it was granted on: a stop or restart ends it.
            created_at (str):
            expires_at (str):
            port (int):
            preview_id (str):
            public (bool):
            revoked (bool):
            url (str): Where the preview is served. A private grant's answer to its create
                carries the token that signs its first visit (shown once); the
                visit leaves a cookie for that host only.
     """

    attempt_id: str
    created_at: str
    expires_at: str
    port: int
    preview_id: str
    public: bool
    revoked: bool
    url: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        attempt_id = self.attempt_id

        created_at = self.created_at

        expires_at = self.expires_at

        port = self.port

        preview_id = self.preview_id

        public = self.public

        revoked = self.revoked

        url = self.url


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "attemptId": attempt_id,
            "createdAt": created_at,
            "expiresAt": expires_at,
            "port": port,
            "previewId": preview_id,
            "public": public,
            "revoked": revoked,
            "url": url,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attempt_id = d.pop("attemptId")

        created_at = d.pop("createdAt")

        expires_at = d.pop("expiresAt")

        port = d.pop("port")

        preview_id = d.pop("previewId")

        public = d.pop("public")

        revoked = d.pop("revoked")

        url = d.pop("url")

        preview_record = cls(
            attempt_id=attempt_id,
            created_at=created_at,
            expires_at=expires_at,
            port=port,
            preview_id=preview_id,
            public=public,
            revoked=revoked,
            url=url,
        )


        preview_record.additional_properties = d
        return preview_record

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
