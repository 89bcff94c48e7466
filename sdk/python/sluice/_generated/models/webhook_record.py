from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="WebhookRecord")



@_attrs_define
class WebhookRecord:
    """ A webhook endpoint. Its secret is never shown again after the create.

        Attributes:
            created_at (str):
            cursor (str): The feed cursor of the last event delivered or passed over.
            enabled (bool): `false` once a run of failed deliveries disabled it.
            events (list[str]): Its type filters; empty: every type.
            failures (int): Failed deliveries in a row.
            id (str):
            url (str):
            disabled_at (None | str | Unset):
            disabled_reason (None | str | Unset): The last failure, when disabled.
     """

    created_at: str
    cursor: str
    enabled: bool
    events: list[str]
    failures: int
    id: str
    url: str
    disabled_at: None | str | Unset = UNSET
    disabled_reason: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at

        cursor = self.cursor

        enabled = self.enabled

        events = self.events



        failures = self.failures

        id = self.id

        url = self.url

        disabled_at: None | str | Unset
        if isinstance(self.disabled_at, Unset):
            disabled_at = UNSET
        else:
            disabled_at = self.disabled_at

        disabled_reason: None | str | Unset
        if isinstance(self.disabled_reason, Unset):
            disabled_reason = UNSET
        else:
            disabled_reason = self.disabled_reason


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "createdAt": created_at,
            "cursor": cursor,
            "enabled": enabled,
            "events": events,
            "failures": failures,
            "id": id,
            "url": url,
        })
        if disabled_at is not UNSET:
            field_dict["disabledAt"] = disabled_at
        if disabled_reason is not UNSET:
            field_dict["disabledReason"] = disabled_reason

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = d.pop("createdAt")

        cursor = d.pop("cursor")

        enabled = d.pop("enabled")

        events = cast(list[str], d.pop("events"))


        failures = d.pop("failures")

        id = d.pop("id")

        url = d.pop("url")

        def _parse_disabled_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        disabled_at = _parse_disabled_at(d.pop("disabledAt", UNSET))


        def _parse_disabled_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        disabled_reason = _parse_disabled_reason(d.pop("disabledReason", UNSET))


        webhook_record = cls(
            created_at=created_at,
            cursor=cursor,
            enabled=enabled,
            events=events,
            failures=failures,
            id=id,
            url=url,
            disabled_at=disabled_at,
            disabled_reason=disabled_reason,
        )


        webhook_record.additional_properties = d
        return webhook_record

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
