from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.path_name_type_1 import PathNameType1





T = TypeVar("T", bound="CaptureDiffResponse")



@_attrs_define
class CaptureDiffResponse:
    """ The paths that differ between two captures' trees (both classes), each
    list sorted and together at most 10,000 long; a path is a string, or
    `{"hex": …}` where it is not UTF-8.

        Attributes:
            added (list[PathNameType1 | str]):
            added_count (int): How many of each there are, listed or not.
            against (int): 0: an empty tree.
            changed (list[PathNameType1 | str]):
            changed_count (int):
            n (int):
            removed (list[PathNameType1 | str]):
            removed_count (int):
            truncated (bool): Whether the lists stop short of the counts.
     """

    added: list[PathNameType1 | str]
    added_count: int
    against: int
    changed: list[PathNameType1 | str]
    changed_count: int
    n: int
    removed: list[PathNameType1 | str]
    removed_count: int
    truncated: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.path_name_type_1 import PathNameType1 # noqa: PLC0415
        added = []
        for added_item_data in self.added:
            added_item: dict[str, Any] | str
            if isinstance(added_item_data, PathNameType1):
                added_item = added_item_data.to_dict()
            else:
                added_item = added_item_data
            added.append(added_item)



        added_count = self.added_count

        against = self.against

        changed = []
        for changed_item_data in self.changed:
            changed_item: dict[str, Any] | str
            if isinstance(changed_item_data, PathNameType1):
                changed_item = changed_item_data.to_dict()
            else:
                changed_item = changed_item_data
            changed.append(changed_item)



        changed_count = self.changed_count

        n = self.n

        removed = []
        for removed_item_data in self.removed:
            removed_item: dict[str, Any] | str
            if isinstance(removed_item_data, PathNameType1):
                removed_item = removed_item_data.to_dict()
            else:
                removed_item = removed_item_data
            removed.append(removed_item)



        removed_count = self.removed_count

        truncated = self.truncated


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "added": added,
            "addedCount": added_count,
            "against": against,
            "changed": changed,
            "changedCount": changed_count,
            "n": n,
            "removed": removed,
            "removedCount": removed_count,
            "truncated": truncated,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.path_name_type_1 import PathNameType1 # noqa: PLC0415
        d = dict(src_dict)
        added = []
        _added = d.pop("added")
        for added_item_data in (_added):
            def _parse_added_item(data: object) -> PathNameType1 | str:
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    componentsschemas_path_name_type_1 = PathNameType1.from_dict(data)



                    return componentsschemas_path_name_type_1
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                return cast(PathNameType1 | str, data)

            added_item = _parse_added_item(added_item_data)

            added.append(added_item)


        added_count = d.pop("addedCount")

        against = d.pop("against")

        changed = []
        _changed = d.pop("changed")
        for changed_item_data in (_changed):
            def _parse_changed_item(data: object) -> PathNameType1 | str:
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    componentsschemas_path_name_type_1 = PathNameType1.from_dict(data)



                    return componentsschemas_path_name_type_1
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                return cast(PathNameType1 | str, data)

            changed_item = _parse_changed_item(changed_item_data)

            changed.append(changed_item)


        changed_count = d.pop("changedCount")

        n = d.pop("n")

        removed = []
        _removed = d.pop("removed")
        for removed_item_data in (_removed):
            def _parse_removed_item(data: object) -> PathNameType1 | str:
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    componentsschemas_path_name_type_1 = PathNameType1.from_dict(data)



                    return componentsschemas_path_name_type_1
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                return cast(PathNameType1 | str, data)

            removed_item = _parse_removed_item(removed_item_data)

            removed.append(removed_item)


        removed_count = d.pop("removedCount")

        truncated = d.pop("truncated")

        capture_diff_response = cls(
            added=added,
            added_count=added_count,
            against=against,
            changed=changed,
            changed_count=changed_count,
            n=n,
            removed=removed,
            removed_count=removed_count,
            truncated=truncated,
        )


        capture_diff_response.additional_properties = d
        return capture_diff_response

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
