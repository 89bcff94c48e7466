from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.warm_pool_level import WarmPoolLevel





T = TypeVar("T", bound="FleetWorker")



@_attrs_define
class FleetWorker:
    """ A worker of the fleet, as it last declared itself.

        Attributes:
            health (str): `healthy`, or `missing` once its heartbeat is overdue (it gets
                nothing new).
            heartbeat_at (str):
            host (str): The host its executors run on.
            id (str):
            runtime (str): The runtime it drives (`local`, `docker`).
            started_at (str):
            version (str):
            warm_pool (list[WarmPoolLevel]): Its host's warm pool per image, as it last tended it (empty: none).
            capacity (int | None | Unset): How many executors its host may hold; absent: no limit.
            internal_url (None | str | Unset): Where the rest of sluice reaches it.
     """

    health: str
    heartbeat_at: str
    host: str
    id: str
    runtime: str
    started_at: str
    version: str
    warm_pool: list[WarmPoolLevel]
    capacity: int | None | Unset = UNSET
    internal_url: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.warm_pool_level import WarmPoolLevel # noqa: PLC0415
        health = self.health

        heartbeat_at = self.heartbeat_at

        host = self.host

        id = self.id

        runtime = self.runtime

        started_at = self.started_at

        version = self.version

        warm_pool = []
        for warm_pool_item_data in self.warm_pool:
            warm_pool_item = warm_pool_item_data.to_dict()
            warm_pool.append(warm_pool_item)



        capacity: int | None | Unset
        if isinstance(self.capacity, Unset):
            capacity = UNSET
        else:
            capacity = self.capacity

        internal_url: None | str | Unset
        if isinstance(self.internal_url, Unset):
            internal_url = UNSET
        else:
            internal_url = self.internal_url


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "health": health,
            "heartbeatAt": heartbeat_at,
            "host": host,
            "id": id,
            "runtime": runtime,
            "startedAt": started_at,
            "version": version,
            "warmPool": warm_pool,
        })
        if capacity is not UNSET:
            field_dict["capacity"] = capacity
        if internal_url is not UNSET:
            field_dict["internalUrl"] = internal_url

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.warm_pool_level import WarmPoolLevel # noqa: PLC0415
        d = dict(src_dict)
        health = d.pop("health")

        heartbeat_at = d.pop("heartbeatAt")

        host = d.pop("host")

        id = d.pop("id")

        runtime = d.pop("runtime")

        started_at = d.pop("startedAt")

        version = d.pop("version")

        warm_pool = []
        _warm_pool = d.pop("warmPool")
        for warm_pool_item_data in (_warm_pool):
            warm_pool_item = WarmPoolLevel.from_dict(warm_pool_item_data)



            warm_pool.append(warm_pool_item)


        def _parse_capacity(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        capacity = _parse_capacity(d.pop("capacity", UNSET))


        def _parse_internal_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        internal_url = _parse_internal_url(d.pop("internalUrl", UNSET))


        fleet_worker = cls(
            health=health,
            heartbeat_at=heartbeat_at,
            host=host,
            id=id,
            runtime=runtime,
            started_at=started_at,
            version=version,
            warm_pool=warm_pool,
            capacity=capacity,
            internal_url=internal_url,
        )


        fleet_worker.additional_properties = d
        return fleet_worker

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
