from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.run_stream_event_kind import RunStreamEventKind
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="RunStreamEvent")



@_attrs_define
class RunStreamEvent:
    """ One event of a run's stream, as Server-Sent Events frame it.

        Attributes:
            data (str): JSON of a `RunStreamData`: the run for `run` and `end`, a
                `RunOutputChunk` for `stdout` and `stderr`, a `RunCommandExit` for
                `exit`.
            event (RunStreamEventKind): The kinds of event a run's stream sends.
            id (None | str | Unset): Its position in the run's output (output and exits only): what
                `Last-Event-ID` resumes after.
     """

    data: str
    event: RunStreamEventKind
    id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        data = self.data

        event = self.event.value

        id: None | str | Unset
        if isinstance(self.id, Unset):
            id = UNSET
        else:
            id = self.id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "data": data,
            "event": event,
        })
        if id is not UNSET:
            field_dict["id"] = id

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        data = d.pop("data")

        event = RunStreamEventKind(d.pop("event"))




        def _parse_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        id = _parse_id(d.pop("id", UNSET))


        run_stream_event = cls(
            data=data,
            event=event,
            id=id,
        )


        run_stream_event.additional_properties = d
        return run_stream_event

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
