from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="SshTargetGateway")



@_attrs_define
class SshTargetGateway:
    """ The credential for one executor's worker, and what its certificate is
    checked against.

        Attributes:
            certificate_authority (str): The install's cluster authority (PEM): the worker's certificate is
                issued under it.
            ticket (str): Sent as `Authorization: Bearer …` to the endpoint; good for this
                executor until `ticketExpiresAt`.
            ticket_expires_at (str):
     """

    certificate_authority: str
    ticket: str
    ticket_expires_at: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        certificate_authority = self.certificate_authority

        ticket = self.ticket

        ticket_expires_at = self.ticket_expires_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "certificateAuthority": certificate_authority,
            "ticket": ticket,
            "ticketExpiresAt": ticket_expires_at,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        certificate_authority = d.pop("certificateAuthority")

        ticket = d.pop("ticket")

        ticket_expires_at = d.pop("ticketExpiresAt")

        ssh_target_gateway = cls(
            certificate_authority=certificate_authority,
            ticket=ticket,
            ticket_expires_at=ticket_expires_at,
        )


        ssh_target_gateway.additional_properties = d
        return ssh_target_gateway

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
