from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="HostImage")



@_attrs_define
class HostImage:
    """ An image in a host's cache.

        Attributes:
            digest (str): Its manifest's digest.
            executors (int): Executors on the host that run on it now (retained ones too): the
                cache's bound never removes it while there are any.
            host (str): The host whose cache holds it.
            last_used_at (str): When an executor last started on it.
            layers (int):
            names (list[str]): The names it was pulled as (`registryId/repository:tag`).
            shared_layers (int): Of its layers, how many another cached image shares.
            size_bytes (int): Bytes on the host: its layers as fetched and its unpacked tree.
     """

    digest: str
    executors: int
    host: str
    last_used_at: str
    layers: int
    names: list[str]
    shared_layers: int
    size_bytes: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        digest = self.digest

        executors = self.executors

        host = self.host

        last_used_at = self.last_used_at

        layers = self.layers

        names = self.names



        shared_layers = self.shared_layers

        size_bytes = self.size_bytes


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "digest": digest,
            "executors": executors,
            "host": host,
            "lastUsedAt": last_used_at,
            "layers": layers,
            "names": names,
            "sharedLayers": shared_layers,
            "sizeBytes": size_bytes,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        digest = d.pop("digest")

        executors = d.pop("executors")

        host = d.pop("host")

        last_used_at = d.pop("lastUsedAt")

        layers = d.pop("layers")

        names = cast(list[str], d.pop("names"))


        shared_layers = d.pop("sharedLayers")

        size_bytes = d.pop("sizeBytes")

        host_image = cls(
            digest=digest,
            executors=executors,
            host=host,
            last_used_at=last_used_at,
            layers=layers,
            names=names,
            shared_layers=shared_layers,
            size_bytes=size_bytes,
        )


        host_image.additional_properties = d
        return host_image

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
