from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="UnpackedArchive")



@_attrs_define
class UnpackedArchive:
    """ What an unpack put in place.

        Attributes:
            directories (int):
            files (int):
            skipped (int): Members neither files, directories nor symlinks (devices, fifos,
                hard links), left out.
            symlinks (int):
     """

    directories: int
    files: int
    skipped: int
    symlinks: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        directories = self.directories

        files = self.files

        skipped = self.skipped

        symlinks = self.symlinks


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "directories": directories,
            "files": files,
            "skipped": skipped,
            "symlinks": symlinks,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        directories = d.pop("directories")

        files = d.pop("files")

        skipped = d.pop("skipped")

        symlinks = d.pop("symlinks")

        unpacked_archive = cls(
            directories=directories,
            files=files,
            skipped=skipped,
            symlinks=symlinks,
        )


        unpacked_archive.additional_properties = d
        return unpacked_archive

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
