from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.worktree_entry_kind import WorktreeEntryKind
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="WorktreeEntry")



@_attrs_define
class WorktreeEntry:
    """ One entry of the worktree: its path (from the listed directory, or the
    worktree for a written file), or `nameHex` (hex of its bytes) where
    that is not UTF-8.

        Attributes:
            kind (WorktreeEntryKind): What kind of entry a path of the worktree is.
            mode (int): Permission bits.
            modified_ms (int): Modified, in milliseconds since the epoch.
            size (int):
            name (None | str | Unset):
            name_hex (None | str | Unset):
     """

    kind: WorktreeEntryKind
    mode: int
    modified_ms: int
    size: int
    name: None | str | Unset = UNSET
    name_hex: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        kind = self.kind.value

        mode = self.mode

        modified_ms = self.modified_ms

        size = self.size

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        name_hex: None | str | Unset
        if isinstance(self.name_hex, Unset):
            name_hex = UNSET
        else:
            name_hex = self.name_hex


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "kind": kind,
            "mode": mode,
            "modifiedMs": modified_ms,
            "size": size,
        })
        if name is not UNSET:
            field_dict["name"] = name
        if name_hex is not UNSET:
            field_dict["nameHex"] = name_hex

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        kind = WorktreeEntryKind(d.pop("kind"))




        mode = d.pop("mode")

        modified_ms = d.pop("modifiedMs")

        size = d.pop("size")

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))


        def _parse_name_hex(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name_hex = _parse_name_hex(d.pop("nameHex", UNSET))


        worktree_entry = cls(
            kind=kind,
            mode=mode,
            modified_ms=modified_ms,
            size=size,
            name=name,
            name_hex=name_hex,
        )


        worktree_entry.additional_properties = d
        return worktree_entry

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
