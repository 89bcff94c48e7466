from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.fleet_host import FleetHost





T = TypeVar("T", bound="ForgetHostResponse")



@_attrs_define
class ForgetHostResponse:
    """ 
        Attributes:
            host (FleetHost): A host executors run on.
            lost_runs (list[str]): The runs whose executors were written off with the host.
     """

    host: FleetHost
    lost_runs: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.fleet_host import FleetHost # noqa: PLC0415
        host = self.host.to_dict()

        lost_runs = self.lost_runs




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "host": host,
            "lostRuns": lost_runs,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.fleet_host import FleetHost # noqa: PLC0415
        d = dict(src_dict)
        host = FleetHost.from_dict(d.pop("host"))




        lost_runs = cast(list[str], d.pop("lostRuns"))


        forget_host_response = cls(
            host=host,
            lost_runs=lost_runs,
        )


        forget_host_response.additional_properties = d
        return forget_host_response

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
