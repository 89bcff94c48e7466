from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="SourceSelection")



@_attrs_define
class SourceSelection:
    """ A repository selection. Accepted by the schema; this install refuses it (422).

        Attributes:
            installation_id (str):
            installation_repository_id (str):
            provider (str): Always `github`.
            ref (None | str | Unset):
     """

    installation_id: str
    installation_repository_id: str
    provider: str
    ref: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        installation_id = self.installation_id

        installation_repository_id = self.installation_repository_id

        provider = self.provider

        ref: None | str | Unset
        if isinstance(self.ref, Unset):
            ref = UNSET
        else:
            ref = self.ref


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "installationId": installation_id,
            "installationRepositoryId": installation_repository_id,
            "provider": provider,
        })
        if ref is not UNSET:
            field_dict["ref"] = ref

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        installation_id = d.pop("installationId")

        installation_repository_id = d.pop("installationRepositoryId")

        provider = d.pop("provider")

        def _parse_ref(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        ref = _parse_ref(d.pop("ref", UNSET))


        source_selection = cls(
            installation_id=installation_id,
            installation_repository_id=installation_repository_id,
            provider=provider,
            ref=ref,
        )

        return source_selection

