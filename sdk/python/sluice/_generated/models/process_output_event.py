from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.process_output_kind import ProcessOutputKind
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ProcessOutputEvent")



@_attrs_define
class ProcessOutputEvent:
    """ One event of a process's output stream, as Server-Sent Events frame it.

        Attributes:
            data (str): JSON: `{"text"}` for output, `{"from", "to"}` for a cut, the process
                (a `ProcessRecord`) once it ended.
            event (ProcessOutputKind): The kinds of event a process's output stream sends.
            id (None | str | Unset): The position after it (output only): what `Last-Event-ID` resumes after.
     """

    data: str
    event: ProcessOutputKind
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

        event = ProcessOutputKind(d.pop("event"))




        def _parse_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        id = _parse_id(d.pop("id", UNSET))


        process_output_event = cls(
            data=data,
            event=event,
            id=id,
        )


        process_output_event.additional_properties = d
        return process_output_event

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
