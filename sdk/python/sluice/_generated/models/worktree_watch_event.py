from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.worktree_watch_kind import WorktreeWatchKind






T = TypeVar("T", bound="WorktreeWatchEvent")



@_attrs_define
class WorktreeWatchEvent:
    """ One event of a watch, as Server-Sent Events frame it.

        Attributes:
            data (str): JSON: `{"kind", "path", "from"?, "directory"}`, paths relative to
                the watched directory.
            event (WorktreeWatchKind): The kinds of change a watch sends.
     """

    data: str
    event: WorktreeWatchKind
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        data = self.data

        event = self.event.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "data": data,
            "event": event,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        data = d.pop("data")

        event = WorktreeWatchKind(d.pop("event"))




        worktree_watch_event = cls(
            data=data,
            event=event,
        )


        worktree_watch_event.additional_properties = d
        return worktree_watch_event

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
