from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.template_build_view import TemplateBuildView





T = TypeVar("T", bound="TemplateView")



@_attrs_define
class TemplateView:
    """ A template and its newest builds.

        Attributes:
            builds (list[TemplateBuildView]): Newest first.
            created_at (str):
            name (str):
            current (None | TemplateBuildView | Unset):
     """

    builds: list[TemplateBuildView]
    created_at: str
    name: str
    current: None | TemplateBuildView | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.template_build_view import TemplateBuildView # noqa: PLC0415
        builds = []
        for builds_item_data in self.builds:
            builds_item = builds_item_data.to_dict()
            builds.append(builds_item)



        created_at = self.created_at

        name = self.name

        current: dict[str, Any] | None | Unset
        if isinstance(self.current, Unset):
            current = UNSET
        elif isinstance(self.current, TemplateBuildView):
            current = self.current.to_dict()
        else:
            current = self.current


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "builds": builds,
            "createdAt": created_at,
            "name": name,
        })
        if current is not UNSET:
            field_dict["current"] = current

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.template_build_view import TemplateBuildView # noqa: PLC0415
        d = dict(src_dict)
        builds = []
        _builds = d.pop("builds")
        for builds_item_data in (_builds):
            builds_item = TemplateBuildView.from_dict(builds_item_data)



            builds.append(builds_item)


        created_at = d.pop("createdAt")

        name = d.pop("name")

        def _parse_current(data: object) -> None | TemplateBuildView | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                current_type_1 = TemplateBuildView.from_dict(data)



                return current_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TemplateBuildView | Unset, data)

        current = _parse_current(d.pop("current", UNSET))


        template_view = cls(
            builds=builds,
            created_at=created_at,
            name=name,
            current=current,
        )


        template_view.additional_properties = d
        return template_view

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
