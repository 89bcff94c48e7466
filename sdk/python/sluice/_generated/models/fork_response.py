from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.forked_workspace import ForkedWorkspace





T = TypeVar("T", bound="ForkResponse")



@_attrs_define
class ForkResponse:
    """ The workspaces a fork made, each on a capture session of its own that
    starts at the fork's point: answered once with each session's token.

        Attributes:
            capture_n (int):
            items (list[ForkedWorkspace]):
            source_session_id (str): The session and capture every fork starts from.
     """

    capture_n: int
    items: list[ForkedWorkspace]
    source_session_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.forked_workspace import ForkedWorkspace # noqa: PLC0415
        capture_n = self.capture_n

        items = []
        for items_item_data in self.items:
            items_item = items_item_data.to_dict()
            items.append(items_item)



        source_session_id = self.source_session_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "captureN": capture_n,
            "items": items,
            "sourceSessionId": source_session_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.forked_workspace import ForkedWorkspace # noqa: PLC0415
        d = dict(src_dict)
        capture_n = d.pop("captureN")

        items = []
        _items = d.pop("items")
        for items_item_data in (_items):
            items_item = ForkedWorkspace.from_dict(items_item_data)



            items.append(items_item)


        source_session_id = d.pop("sourceSessionId")

        fork_response = cls(
            capture_n=capture_n,
            items=items,
            source_session_id=source_session_id,
        )


        fork_response.additional_properties = d
        return fork_response

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
