from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="WebhookDeliveryRecord")



@_attrs_define
class WebhookDeliveryRecord:
    """ One delivery tried.

        Attributes:
            at (str):
            attempt (int): The try's number for this event, from 1.
            delivered (bool):
            duration_ms (int):
            event_id (str): The event's id: the `webhook-id` header, the same on every try.
            event_type (str):
            id (str):
            error (None | str | Unset):
            status_code (int | None | Unset):
     """

    at: str
    attempt: int
    delivered: bool
    duration_ms: int
    event_id: str
    event_type: str
    id: str
    error: None | str | Unset = UNSET
    status_code: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        at = self.at

        attempt = self.attempt

        delivered = self.delivered

        duration_ms = self.duration_ms

        event_id = self.event_id

        event_type = self.event_type

        id = self.id

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        status_code: int | None | Unset
        if isinstance(self.status_code, Unset):
            status_code = UNSET
        else:
            status_code = self.status_code


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "at": at,
            "attempt": attempt,
            "delivered": delivered,
            "durationMs": duration_ms,
            "eventId": event_id,
            "eventType": event_type,
            "id": id,
        })
        if error is not UNSET:
            field_dict["error"] = error
        if status_code is not UNSET:
            field_dict["statusCode"] = status_code

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = d.pop("at")

        attempt = d.pop("attempt")

        delivered = d.pop("delivered")

        duration_ms = d.pop("durationMs")

        event_id = d.pop("eventId")

        event_type = d.pop("eventType")

        id = d.pop("id")

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))


        def _parse_status_code(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        status_code = _parse_status_code(d.pop("statusCode", UNSET))


        webhook_delivery_record = cls(
            at=at,
            attempt=attempt,
            delivered=delivered,
            duration_ms=duration_ms,
            event_id=event_id,
            event_type=event_type,
            id=id,
            error=error,
            status_code=status_code,
        )


        webhook_delivery_record.additional_properties = d
        return webhook_delivery_record

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
