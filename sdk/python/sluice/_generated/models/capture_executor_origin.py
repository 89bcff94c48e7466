from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="CaptureExecutorOrigin")



@_attrs_define
class CaptureExecutorOrigin:
    """ Where in an executor's own history it made an answer or a seal.

        Attributes:
            boot_generation (int):
            boot_id (str):
            epoch (int):
            launch (str):
            observation (int):
            head_n (int | None | Unset):
     """

    boot_generation: int
    boot_id: str
    epoch: int
    launch: str
    observation: int
    head_n: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        boot_generation = self.boot_generation

        boot_id = self.boot_id

        epoch = self.epoch

        launch = self.launch

        observation = self.observation

        head_n: int | None | Unset
        if isinstance(self.head_n, Unset):
            head_n = UNSET
        else:
            head_n = self.head_n


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "bootGeneration": boot_generation,
            "bootId": boot_id,
            "epoch": epoch,
            "launch": launch,
            "observation": observation,
        })
        if head_n is not UNSET:
            field_dict["headN"] = head_n

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        boot_generation = d.pop("bootGeneration")

        boot_id = d.pop("bootId")

        epoch = d.pop("epoch")

        launch = d.pop("launch")

        observation = d.pop("observation")

        def _parse_head_n(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        head_n = _parse_head_n(d.pop("headN", UNSET))


        capture_executor_origin = cls(
            boot_generation=boot_generation,
            boot_id=boot_id,
            epoch=epoch,
            launch=launch,
            observation=observation,
            head_n=head_n,
        )

        return capture_executor_origin

