from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="CreateWebhookRequest")



@_attrs_define
class CreateWebhookRequest:
    """ A webhook endpoint to register.

        Attributes:
            url (str): Where deliveries are posted: `https://` (or `http://`), no user or
                password. An address inside the install's hosts or networks is
                refused unless the install allows it.
            events (list[str] | Unset): Event types it takes: names (`runtime.ready`), prefixes (`runtime.*`,
                `sluice.*`) or `*`. Absent or empty: every type.
            secret (None | str | Unset): The signing secret, `whsec_` and the base64 of 24 to 64 bytes.
                Absent: sluice makes one and answers it once, in this response.
     """

    url: str
    events: list[str] | Unset = UNSET
    secret: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        url = self.url

        events: list[str] | Unset = UNSET
        if not isinstance(self.events, Unset):
            events = self.events



        secret: None | str | Unset
        if isinstance(self.secret, Unset):
            secret = UNSET
        else:
            secret = self.secret


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "url": url,
        })
        if events is not UNSET:
            field_dict["events"] = events
        if secret is not UNSET:
            field_dict["secret"] = secret

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        url = d.pop("url")

        events = cast(list[str], d.pop("events", UNSET))


        def _parse_secret(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        secret = _parse_secret(d.pop("secret", UNSET))


        create_webhook_request = cls(
            url=url,
            events=events,
            secret=secret,
        )

        return create_webhook_request

