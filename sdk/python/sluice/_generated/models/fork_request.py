from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ForkRequest")



@_attrs_define
class ForkRequest:
    """ A fork: how many, and what their names start with.

        Attributes:
            count (int): How many workspaces to make, 1 to 100.
            owner_user_id (str): The user the workspace belongs to.
            name_prefix (None | str | Unset): Their names are this followed by `-1`, `-2`, … (default: the
                source workspace's name and `-fork`).
     """

    count: int
    owner_user_id: str
    name_prefix: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        count = self.count

        owner_user_id = self.owner_user_id

        name_prefix: None | str | Unset
        if isinstance(self.name_prefix, Unset):
            name_prefix = UNSET
        else:
            name_prefix = self.name_prefix


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "count": count,
            "ownerUserId": owner_user_id,
        })
        if name_prefix is not UNSET:
            field_dict["namePrefix"] = name_prefix

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        count = d.pop("count")

        owner_user_id = d.pop("ownerUserId")

        def _parse_name_prefix(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name_prefix = _parse_name_prefix(d.pop("namePrefix", UNSET))


        fork_request = cls(
            count=count,
            owner_user_id=owner_user_id,
            name_prefix=name_prefix,
        )

        return fork_request

