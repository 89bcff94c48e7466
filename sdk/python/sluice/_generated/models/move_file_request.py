from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="MoveFileRequest")



@_attrs_define
class MoveFileRequest:
    """ 
        Attributes:
            from_ (str):
            owner_user_id (str): The user the workspace belongs to.
            to (str):
            overwrite (bool | None | Unset): Replace what is at `to`.
     """

    from_: str
    owner_user_id: str
    to: str
    overwrite: bool | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from_ = self.from_

        owner_user_id = self.owner_user_id

        to = self.to

        overwrite: bool | None | Unset
        if isinstance(self.overwrite, Unset):
            overwrite = UNSET
        else:
            overwrite = self.overwrite


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "from": from_,
            "ownerUserId": owner_user_id,
            "to": to,
        })
        if overwrite is not UNSET:
            field_dict["overwrite"] = overwrite

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        from_ = d.pop("from")

        owner_user_id = d.pop("ownerUserId")

        to = d.pop("to")

        def _parse_overwrite(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        overwrite = _parse_overwrite(d.pop("overwrite", UNSET))


        move_file_request = cls(
            from_=from_,
            owner_user_id=owner_user_id,
            to=to,
            overwrite=overwrite,
        )

        return move_file_request

