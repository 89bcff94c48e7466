from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="SshKeyRecord")



@_attrs_define
class SshKeyRecord:
    """ A registered SSH key.

        Attributes:
            created_at (str):
            fingerprint (str): `SHA256:…`, as `ssh-keygen -lf` prints it: the key's id.
            principal (str):
            public_key (str): The key in OpenSSH format, without its comment.
     """

    created_at: str
    fingerprint: str
    principal: str
    public_key: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at

        fingerprint = self.fingerprint

        principal = self.principal

        public_key = self.public_key


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "createdAt": created_at,
            "fingerprint": fingerprint,
            "principal": principal,
            "publicKey": public_key,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = d.pop("createdAt")

        fingerprint = d.pop("fingerprint")

        principal = d.pop("principal")

        public_key = d.pop("publicKey")

        ssh_key_record = cls(
            created_at=created_at,
            fingerprint=fingerprint,
            principal=principal,
            public_key=public_key,
        )


        ssh_key_record.additional_properties = d
        return ssh_key_record

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
