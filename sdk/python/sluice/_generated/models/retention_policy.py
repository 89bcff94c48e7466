from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="RetentionPolicy")



@_attrs_define
class RetentionPolicy:
    """ Which captures a session keeps: the newest `keepLast`, and every one
    registered within `keepWithinSeconds` (either rule keeps a capture; with
    neither, every capture is kept). The head and the final seal are always
    kept.

        Attributes:
            keep_last (int | None | Unset):
            keep_within_seconds (int | None | Unset):
     """

    keep_last: int | None | Unset = UNSET
    keep_within_seconds: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        keep_last: int | None | Unset
        if isinstance(self.keep_last, Unset):
            keep_last = UNSET
        else:
            keep_last = self.keep_last

        keep_within_seconds: int | None | Unset
        if isinstance(self.keep_within_seconds, Unset):
            keep_within_seconds = UNSET
        else:
            keep_within_seconds = self.keep_within_seconds


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if keep_last is not UNSET:
            field_dict["keepLast"] = keep_last
        if keep_within_seconds is not UNSET:
            field_dict["keepWithinSeconds"] = keep_within_seconds

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_keep_last(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        keep_last = _parse_keep_last(d.pop("keepLast", UNSET))


        def _parse_keep_within_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        keep_within_seconds = _parse_keep_within_seconds(d.pop("keepWithinSeconds", UNSET))


        retention_policy = cls(
            keep_last=keep_last,
            keep_within_seconds=keep_within_seconds,
        )

        return retention_policy

