from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="SignalProcessRequest")



@_attrs_define
class SignalProcessRequest:
    """ 
        Attributes:
            owner_user_id (str): The user the workspace belongs to.
            signal (str): `TERM`, `INT`, `KILL`, `HUP`, `QUIT`, `USR1`, `USR2`, `PIPE` or `ALRM`.
     """

    owner_user_id: str
    signal: str





    def to_dict(self) -> dict[str, Any]:
        owner_user_id = self.owner_user_id

        signal = self.signal


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "ownerUserId": owner_user_id,
            "signal": signal,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        owner_user_id = d.pop("ownerUserId")

        signal = d.pop("signal")

        signal_process_request = cls(
            owner_user_id=owner_user_id,
            signal=signal,
        )

        return signal_process_request

