from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="WorkspacePublishedImage")



@_attrs_define
class WorkspacePublishedImage:
    """ 
        Attributes:
            digest (str):
            digest_reference (str):
            reference (str):
     """

    digest: str
    digest_reference: str
    reference: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        digest = self.digest

        digest_reference = self.digest_reference

        reference = self.reference


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "digest": digest,
            "digestReference": digest_reference,
            "reference": reference,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        digest = d.pop("digest")

        digest_reference = d.pop("digestReference")

        reference = d.pop("reference")

        workspace_published_image = cls(
            digest=digest,
            digest_reference=digest_reference,
            reference=reference,
        )


        workspace_published_image.additional_properties = d
        return workspace_published_image

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
