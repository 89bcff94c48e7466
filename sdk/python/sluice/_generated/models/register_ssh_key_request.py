from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="RegisterSshKeyRequest")



@_attrs_define
class RegisterSshKeyRequest:
    """ A user's SSH public key to register for a principal.

        Attributes:
            principal (str): Who the key's holder is: the principal an SSH gateway authorizes.
            public_key (str): The key in OpenSSH format (`ssh-ed25519 AAAA… comment`); the comment
                is not kept.
     """

    principal: str
    public_key: str





    def to_dict(self) -> dict[str, Any]:
        principal = self.principal

        public_key = self.public_key


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "principal": principal,
            "publicKey": public_key,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        principal = d.pop("principal")

        public_key = d.pop("publicKey")

        register_ssh_key_request = cls(
            principal=principal,
            public_key=public_key,
        )

        return register_ssh_key_request

