from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.run_relation import RunRelation
from ..models.trigger_type import TriggerType
from ..models.workspace_status import WorkspaceStatus
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.workspace_attempt_summary_spec import WorkspaceAttemptSummarySpec
  from ..models.workspace_error import WorkspaceError
  from ..models.workspace_published_image import WorkspacePublishedImage
  from ..models.workspace_runtime import WorkspaceRuntime





T = TypeVar("T", bound="WorkspaceAttemptSummary")



@_attrs_define
class WorkspaceAttemptSummary:
    """ 
        Attributes:
            attempt_id (str):
            created_at (str):
            linked_at (str):
            queued_at (str):
            relation (RunRelation):
            spec (WorkspaceAttemptSummarySpec):
            status (WorkspaceStatus):
            trigger_type (TriggerType):
            updated_at (str):
            duration_ms (int | None | Unset):
            error (None | Unset | WorkspaceError):
            finished_at (None | str | Unset):
            host (None | str | Unset): The host its executor was placed on (sluice).
            launch_id (None | str | Unset): The launch identity the create named.
            published_image (None | Unset | WorkspacePublishedImage):
            runtime (None | Unset | WorkspaceRuntime):
            started_at (None | str | Unset):
            trigger_ref (None | str | Unset):
     """

    attempt_id: str
    created_at: str
    linked_at: str
    queued_at: str
    relation: RunRelation
    spec: WorkspaceAttemptSummarySpec
    status: WorkspaceStatus
    trigger_type: TriggerType
    updated_at: str
    duration_ms: int | None | Unset = UNSET
    error: None | Unset | WorkspaceError = UNSET
    finished_at: None | str | Unset = UNSET
    host: None | str | Unset = UNSET
    launch_id: None | str | Unset = UNSET
    published_image: None | Unset | WorkspacePublishedImage = UNSET
    runtime: None | Unset | WorkspaceRuntime = UNSET
    started_at: None | str | Unset = UNSET
    trigger_ref: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.workspace_attempt_summary_spec import WorkspaceAttemptSummarySpec # noqa: PLC0415
        from ..models.workspace_error import WorkspaceError # noqa: PLC0415
        from ..models.workspace_published_image import WorkspacePublishedImage # noqa: PLC0415
        from ..models.workspace_runtime import WorkspaceRuntime # noqa: PLC0415
        attempt_id = self.attempt_id

        created_at = self.created_at

        linked_at = self.linked_at

        queued_at = self.queued_at

        relation = self.relation.value

        spec = self.spec.to_dict()

        status = self.status.value

        trigger_type = self.trigger_type.value

        updated_at = self.updated_at

        duration_ms: int | None | Unset
        if isinstance(self.duration_ms, Unset):
            duration_ms = UNSET
        else:
            duration_ms = self.duration_ms

        error: dict[str, Any] | None | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        elif isinstance(self.error, WorkspaceError):
            error = self.error.to_dict()
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

        launch_id: None | str | Unset
        if isinstance(self.launch_id, Unset):
            launch_id = UNSET
        else:
            launch_id = self.launch_id

        published_image: dict[str, Any] | None | Unset
        if isinstance(self.published_image, Unset):
            published_image = UNSET
        elif isinstance(self.published_image, WorkspacePublishedImage):
            published_image = self.published_image.to_dict()
        else:
            published_image = self.published_image

        runtime: dict[str, Any] | None | Unset
        if isinstance(self.runtime, Unset):
            runtime = UNSET
        elif isinstance(self.runtime, WorkspaceRuntime):
            runtime = self.runtime.to_dict()
        else:
            runtime = self.runtime

        started_at: None | str | Unset
        if isinstance(self.started_at, Unset):
            started_at = UNSET
        else:
            started_at = self.started_at

        trigger_ref: None | str | Unset
        if isinstance(self.trigger_ref, Unset):
            trigger_ref = UNSET
        else:
            trigger_ref = self.trigger_ref


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "attemptId": attempt_id,
            "createdAt": created_at,
            "linkedAt": linked_at,
            "queuedAt": queued_at,
            "relation": relation,
            "spec": spec,
            "status": status,
            "triggerType": trigger_type,
            "updatedAt": updated_at,
        })
        if duration_ms is not UNSET:
            field_dict["durationMs"] = duration_ms
        if error is not UNSET:
            field_dict["error"] = error
        if finished_at is not UNSET:
            field_dict["finishedAt"] = finished_at
        if host is not UNSET:
            field_dict["host"] = host
        if launch_id is not UNSET:
            field_dict["launchId"] = launch_id
        if published_image is not UNSET:
            field_dict["publishedImage"] = published_image
        if runtime is not UNSET:
            field_dict["runtime"] = runtime
        if started_at is not UNSET:
            field_dict["startedAt"] = started_at
        if trigger_ref is not UNSET:
            field_dict["triggerRef"] = trigger_ref

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.workspace_attempt_summary_spec import WorkspaceAttemptSummarySpec # noqa: PLC0415
        from ..models.workspace_error import WorkspaceError # noqa: PLC0415
        from ..models.workspace_published_image import WorkspacePublishedImage # noqa: PLC0415
        from ..models.workspace_runtime import WorkspaceRuntime # noqa: PLC0415
        d = dict(src_dict)
        attempt_id = d.pop("attemptId")

        created_at = d.pop("createdAt")

        linked_at = d.pop("linkedAt")

        queued_at = d.pop("queuedAt")

        relation = RunRelation(d.pop("relation"))




        spec = WorkspaceAttemptSummarySpec.from_dict(d.pop("spec"))




        status = WorkspaceStatus(d.pop("status"))




        trigger_type = TriggerType(d.pop("triggerType"))




        updated_at = d.pop("updatedAt")

        def _parse_duration_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        duration_ms = _parse_duration_ms(d.pop("durationMs", UNSET))


        def _parse_error(data: object) -> None | Unset | WorkspaceError:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_1 = WorkspaceError.from_dict(data)



                return error_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WorkspaceError, data)

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


        def _parse_launch_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        launch_id = _parse_launch_id(d.pop("launchId", UNSET))


        def _parse_published_image(data: object) -> None | Unset | WorkspacePublishedImage:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                published_image_type_1 = WorkspacePublishedImage.from_dict(data)



                return published_image_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WorkspacePublishedImage, data)

        published_image = _parse_published_image(d.pop("publishedImage", UNSET))


        def _parse_runtime(data: object) -> None | Unset | WorkspaceRuntime:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                runtime_type_1 = WorkspaceRuntime.from_dict(data)



                return runtime_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WorkspaceRuntime, data)

        runtime = _parse_runtime(d.pop("runtime", UNSET))


        def _parse_started_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        started_at = _parse_started_at(d.pop("startedAt", UNSET))


        def _parse_trigger_ref(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        trigger_ref = _parse_trigger_ref(d.pop("triggerRef", UNSET))


        workspace_attempt_summary = cls(
            attempt_id=attempt_id,
            created_at=created_at,
            linked_at=linked_at,
            queued_at=queued_at,
            relation=relation,
            spec=spec,
            status=status,
            trigger_type=trigger_type,
            updated_at=updated_at,
            duration_ms=duration_ms,
            error=error,
            finished_at=finished_at,
            host=host,
            launch_id=launch_id,
            published_image=published_image,
            runtime=runtime,
            started_at=started_at,
            trigger_ref=trigger_ref,
        )


        workspace_attempt_summary.additional_properties = d
        return workspace_attempt_summary

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
