from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.capture_timeline_entry import CaptureTimelineEntry





T = TypeVar("T", bound="CaptureTimelineResponse")



@_attrs_define
class CaptureTimelineResponse:
    """ A page of a session's kept captures, in chain order.

        Attributes:
            captures (list[CaptureTimelineEntry]):
            next_after (int | None | Unset): Pass as `after` for the next page; absent on the last.
     """

    captures: list[CaptureTimelineEntry]
    next_after: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.capture_timeline_entry import CaptureTimelineEntry # noqa: PLC0415
        captures = []
        for captures_item_data in self.captures:
            captures_item = captures_item_data.to_dict()
            captures.append(captures_item)



        next_after: int | None | Unset
        if isinstance(self.next_after, Unset):
            next_after = UNSET
        else:
            next_after = self.next_after


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "captures": captures,
        })
        if next_after is not UNSET:
            field_dict["nextAfter"] = next_after

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.capture_timeline_entry import CaptureTimelineEntry # noqa: PLC0415
        d = dict(src_dict)
        captures = []
        _captures = d.pop("captures")
        for captures_item_data in (_captures):
            captures_item = CaptureTimelineEntry.from_dict(captures_item_data)



            captures.append(captures_item)


        def _parse_next_after(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        next_after = _parse_next_after(d.pop("nextAfter", UNSET))


        capture_timeline_response = cls(
            captures=captures,
            next_after=next_after,
        )


        capture_timeline_response.additional_properties = d
        return capture_timeline_response

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
