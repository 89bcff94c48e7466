from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.event_type import EventType
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.workspace_event_data_type_0 import WorkspaceEventDataType0





T = TypeVar("T", bound="WorkspaceEvent")



@_attrs_define
class WorkspaceEvent:
    """ A workspace event as the API lists it, streams carry it and webhooks
    deliver it.

        Attributes:
            event_id (str):
            occurred_at (str):
            sequence (int): Position in the workspace's own event log, from 1.
            type_ (EventType):
            workspace_id (str):
            attempt_id (None | str | Unset):
            data (None | Unset | WorkspaceEventDataType0):
            message (None | str | Unset):
     """

    event_id: str
    occurred_at: str
    sequence: int
    type_: EventType
    workspace_id: str
    attempt_id: None | str | Unset = UNSET
    data: None | Unset | WorkspaceEventDataType0 = UNSET
    message: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.workspace_event_data_type_0 import WorkspaceEventDataType0 # noqa: PLC0415
        event_id = self.event_id

        occurred_at = self.occurred_at

        sequence = self.sequence

        type_ = self.type_.value

        workspace_id = self.workspace_id

        attempt_id: None | str | Unset
        if isinstance(self.attempt_id, Unset):
            attempt_id = UNSET
        else:
            attempt_id = self.attempt_id

        data: dict[str, Any] | None | Unset
        if isinstance(self.data, Unset):
            data = UNSET
        elif isinstance(self.data, WorkspaceEventDataType0):
            data = self.data.to_dict()
        else:
            data = self.data

        message: None | str | Unset
        if isinstance(self.message, Unset):
            message = UNSET
        else:
            message = self.message


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "eventId": event_id,
            "occurredAt": occurred_at,
            "sequence": sequence,
            "type": type_,
            "workspaceId": workspace_id,
        })
        if attempt_id is not UNSET:
            field_dict["attemptId"] = attempt_id
        if data is not UNSET:
            field_dict["data"] = data
        if message is not UNSET:
            field_dict["message"] = message

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.workspace_event_data_type_0 import WorkspaceEventDataType0 # noqa: PLC0415
        d = dict(src_dict)
        event_id = d.pop("eventId")

        occurred_at = d.pop("occurredAt")

        sequence = d.pop("sequence")

        type_ = EventType(d.pop("type"))




        workspace_id = d.pop("workspaceId")

        def _parse_attempt_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        attempt_id = _parse_attempt_id(d.pop("attemptId", UNSET))


        def _parse_data(data: object) -> None | Unset | WorkspaceEventDataType0:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                data_type_0 = WorkspaceEventDataType0.from_dict(data)



                return data_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WorkspaceEventDataType0, data)

        data = _parse_data(d.pop("data", UNSET))


        def _parse_message(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        message = _parse_message(d.pop("message", UNSET))


        workspace_event = cls(
            event_id=event_id,
            occurred_at=occurred_at,
            sequence=sequence,
            type_=type_,
            workspace_id=workspace_id,
            attempt_id=attempt_id,
            data=data,
            message=message,
        )


        workspace_event.additional_properties = d
        return workspace_event

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
