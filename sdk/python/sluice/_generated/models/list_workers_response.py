from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.fleet_host import FleetHost
  from ..models.fleet_worker import FleetWorker





T = TypeVar("T", bound="ListWorkersResponse")



@_attrs_define
class ListWorkersResponse:
    """ 
        Attributes:
            hosts (list[FleetHost]): Every host the fleet knows, by name.
            items (list[FleetWorker]): Every registered worker, by host.
     """

    hosts: list[FleetHost]
    items: list[FleetWorker]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.fleet_host import FleetHost # noqa: PLC0415
        from ..models.fleet_worker import FleetWorker # noqa: PLC0415
        hosts = []
        for hosts_item_data in self.hosts:
            hosts_item = hosts_item_data.to_dict()
            hosts.append(hosts_item)



        items = []
        for items_item_data in self.items:
            items_item = items_item_data.to_dict()
            items.append(items_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "hosts": hosts,
            "items": items,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.fleet_host import FleetHost # noqa: PLC0415
        from ..models.fleet_worker import FleetWorker # noqa: PLC0415
        d = dict(src_dict)
        hosts = []
        _hosts = d.pop("hosts")
        for hosts_item_data in (_hosts):
            hosts_item = FleetHost.from_dict(hosts_item_data)



            hosts.append(hosts_item)


        items = []
        _items = d.pop("items")
        for items_item_data in (_items):
            items_item = FleetWorker.from_dict(items_item_data)



            items.append(items_item)


        list_workers_response = cls(
            hosts=hosts,
            items=items,
        )


        list_workers_response.additional_properties = d
        return list_workers_response

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
