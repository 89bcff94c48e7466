from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.host_state import HostState
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.operator_mark import OperatorMark





T = TypeVar("T", bound="FleetHost")



@_attrs_define
class FleetHost:
    """ A host executors run on.

        Attributes:
            last_seen_at (str):
            live_workers (int): Workers of it whose heartbeat is fresh.
            load (int): Executors placed on it and not removed.
            name (str):
            state (HostState):
            state_changed_at (str):
            takes_new_work (bool): Whether a new executor may go there now.
            capacity (int | None | Unset): How many executors it may hold; absent: no limit.
            cordoned (None | OperatorMark | Unset):
            forgotten (None | OperatorMark | Unset):
     """

    last_seen_at: str
    live_workers: int
    load: int
    name: str
    state: HostState
    state_changed_at: str
    takes_new_work: bool
    capacity: int | None | Unset = UNSET
    cordoned: None | OperatorMark | Unset = UNSET
    forgotten: None | OperatorMark | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.operator_mark import OperatorMark # noqa: PLC0415
        last_seen_at = self.last_seen_at

        live_workers = self.live_workers

        load = self.load

        name = self.name

        state = self.state.value

        state_changed_at = self.state_changed_at

        takes_new_work = self.takes_new_work

        capacity: int | None | Unset
        if isinstance(self.capacity, Unset):
            capacity = UNSET
        else:
            capacity = self.capacity

        cordoned: dict[str, Any] | None | Unset
        if isinstance(self.cordoned, Unset):
            cordoned = UNSET
        elif isinstance(self.cordoned, OperatorMark):
            cordoned = self.cordoned.to_dict()
        else:
            cordoned = self.cordoned

        forgotten: dict[str, Any] | None | Unset
        if isinstance(self.forgotten, Unset):
            forgotten = UNSET
        elif isinstance(self.forgotten, OperatorMark):
            forgotten = self.forgotten.to_dict()
        else:
            forgotten = self.forgotten


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "lastSeenAt": last_seen_at,
            "liveWorkers": live_workers,
            "load": load,
            "name": name,
            "state": state,
            "stateChangedAt": state_changed_at,
            "takesNewWork": takes_new_work,
        })
        if capacity is not UNSET:
            field_dict["capacity"] = capacity
        if cordoned is not UNSET:
            field_dict["cordoned"] = cordoned
        if forgotten is not UNSET:
            field_dict["forgotten"] = forgotten

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.operator_mark import OperatorMark # noqa: PLC0415
        d = dict(src_dict)
        last_seen_at = d.pop("lastSeenAt")

        live_workers = d.pop("liveWorkers")

        load = d.pop("load")

        name = d.pop("name")

        state = HostState(d.pop("state"))




        state_changed_at = d.pop("stateChangedAt")

        takes_new_work = d.pop("takesNewWork")

        def _parse_capacity(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        capacity = _parse_capacity(d.pop("capacity", UNSET))


        def _parse_cordoned(data: object) -> None | OperatorMark | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                cordoned_type_1 = OperatorMark.from_dict(data)



                return cordoned_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OperatorMark | Unset, data)

        cordoned = _parse_cordoned(d.pop("cordoned", UNSET))


        def _parse_forgotten(data: object) -> None | OperatorMark | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                forgotten_type_1 = OperatorMark.from_dict(data)



                return forgotten_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OperatorMark | Unset, data)

        forgotten = _parse_forgotten(d.pop("forgotten", UNSET))


        fleet_host = cls(
            last_seen_at=last_seen_at,
            live_workers=live_workers,
            load=load,
            name=name,
            state=state,
            state_changed_at=state_changed_at,
            takes_new_work=takes_new_work,
            capacity=capacity,
            cordoned=cordoned,
            forgotten=forgotten,
        )


        fleet_host.additional_properties = d
        return fleet_host

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
