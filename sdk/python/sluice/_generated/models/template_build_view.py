from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="TemplateBuildView")



@_attrs_define
class TemplateBuildView:
    """ One build of a template.

        Attributes:
            cache_hit (bool): Succeeded at once: the Dockerfile and context were those of an earlier successful build.
            created_at (str):
            id (str):
            state (str): `queued`, `building`, `succeeded` or `failed`.
            template (str):
            builder (None | str | Unset): What built it (`docker`, `buildah`) and on which host.
            digest (None | str | Unset): The built image's manifest digest.
            duration_ms (int | None | Unset): From the build's start to its end.
            error (None | str | Unset): Why it failed.
            finished_at (None | str | Unset):
            host (None | str | Unset):
            ready_command (None | str | Unset):
            size_bytes (int | None | Unset):
            start_command (None | str | Unset):
            started_at (None | str | Unset):
     """

    cache_hit: bool
    created_at: str
    id: str
    state: str
    template: str
    builder: None | str | Unset = UNSET
    digest: None | str | Unset = UNSET
    duration_ms: int | None | Unset = UNSET
    error: None | str | Unset = UNSET
    finished_at: None | str | Unset = UNSET
    host: None | str | Unset = UNSET
    ready_command: None | str | Unset = UNSET
    size_bytes: int | None | Unset = UNSET
    start_command: None | str | Unset = UNSET
    started_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        cache_hit = self.cache_hit

        created_at = self.created_at

        id = self.id

        state = self.state

        template = self.template

        builder: None | str | Unset
        if isinstance(self.builder, Unset):
            builder = UNSET
        else:
            builder = self.builder

        digest: None | str | Unset
        if isinstance(self.digest, Unset):
            digest = UNSET
        else:
            digest = self.digest

        duration_ms: int | None | Unset
        if isinstance(self.duration_ms, Unset):
            duration_ms = UNSET
        else:
            duration_ms = self.duration_ms

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        else:
            finished_at = self.finished_at

        host: None | str | Unset
        if isinstance(self.host, Unset):
            host = UNSET
        else:
            host = self.host

        ready_command: None | str | Unset
        if isinstance(self.ready_command, Unset):
            ready_command = UNSET
        else:
            ready_command = self.ready_command

        size_bytes: int | None | Unset
        if isinstance(self.size_bytes, Unset):
            size_bytes = UNSET
        else:
            size_bytes = self.size_bytes

        start_command: None | str | Unset
        if isinstance(self.start_command, Unset):
            start_command = UNSET
        else:
            start_command = self.start_command

        started_at: None | str | Unset
        if isinstance(self.started_at, Unset):
            started_at = UNSET
        else:
            started_at = self.started_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "cacheHit": cache_hit,
            "createdAt": created_at,
            "id": id,
            "state": state,
            "template": template,
        })
        if builder is not UNSET:
            field_dict["builder"] = builder
        if digest is not UNSET:
            field_dict["digest"] = digest
        if duration_ms is not UNSET:
            field_dict["durationMs"] = duration_ms
        if error is not UNSET:
            field_dict["error"] = error
        if finished_at is not UNSET:
            field_dict["finishedAt"] = finished_at
        if host is not UNSET:
            field_dict["host"] = host
        if ready_command is not UNSET:
            field_dict["readyCommand"] = ready_command
        if size_bytes is not UNSET:
            field_dict["sizeBytes"] = size_bytes
        if start_command is not UNSET:
            field_dict["startCommand"] = start_command
        if started_at is not UNSET:
            field_dict["startedAt"] = started_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cache_hit = d.pop("cacheHit")

        created_at = d.pop("createdAt")

        id = d.pop("id")

        state = d.pop("state")

        template = d.pop("template")

        def _parse_builder(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        builder = _parse_builder(d.pop("builder", UNSET))


        def _parse_digest(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        digest = _parse_digest(d.pop("digest", UNSET))


        def _parse_duration_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        duration_ms = _parse_duration_ms(d.pop("durationMs", UNSET))


        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))


        def _parse_finished_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        finished_at = _parse_finished_at(d.pop("finishedAt", UNSET))


        def _parse_host(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        host = _parse_host(d.pop("host", UNSET))


        def _parse_ready_command(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        ready_command = _parse_ready_command(d.pop("readyCommand", UNSET))


        def _parse_size_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        size_bytes = _parse_size_bytes(d.pop("sizeBytes", UNSET))


        def _parse_start_command(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        start_command = _parse_start_command(d.pop("startCommand", UNSET))


        def _parse_started_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        started_at = _parse_started_at(d.pop("startedAt", UNSET))


        template_build_view = cls(
            cache_hit=cache_hit,
            created_at=created_at,
            id=id,
            state=state,
            template=template,
            builder=builder,
            digest=digest,
            duration_ms=duration_ms,
            error=error,
            finished_at=finished_at,
            host=host,
            ready_command=ready_command,
            size_bytes=size_bytes,
            start_command=start_command,
            started_at=started_at,
        )


        template_build_view.additional_properties = d
        return template_build_view

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
