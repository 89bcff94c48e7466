from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.run_stream_event import RunStreamEvent
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    run_id: str,
    *,
    owner_user_id: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(last_event_id, Unset):
        headers["Last-Event-ID"] = last_event_id



    

    params: dict[str, Any] = {}

    params["ownerUserId"] = owner_user_id


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/runs/{run_id}/stream".format(run_id=quote(str(run_id), safe=""),),
        "params": params,
    }


    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | RunStreamEvent | None:
    if response.status_code == 200:
        response_200 = RunStreamEvent.from_dict(response.text)



        return response_200

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())



        return response_404

    if response.status_code == 503:
        response_503 = ErrorBody.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | RunStreamEvent]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    run_id: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> Response[ErrorBody | RunStreamEvent]:
    """ The run's output as it happens (Server-Sent Events).

     The run's output as it happens, as Server-Sent Events, from the start or after `Last-Event-ID`:
    `event: stdout` and `event: stderr` (`data: {"command", "text"}`, a chunk of that command's stream,
    cut at character boundaries), `event: exit` (`data: {"command", "exitCode", "timedOut",
    "stdoutTruncated", "stderrTruncated"}`: a stream cut at its 1 MiB bound says so here), each with
    `id:` its position; then `event: end` with the run as `GET /v1/runs/{runId}` answers it, and the
    stream closes. A comment `heartbeat` is sent while nothing happens.

    Args:
        run_id (str):
        owner_user_id (str | Unset): The user the workspace belongs to.
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | RunStreamEvent]
     """


    kwargs = _get_kwargs(
        run_id=run_id,
owner_user_id=owner_user_id,
last_event_id=last_event_id,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    run_id: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> ErrorBody | RunStreamEvent | None:
    """ The run's output as it happens (Server-Sent Events).

     The run's output as it happens, as Server-Sent Events, from the start or after `Last-Event-ID`:
    `event: stdout` and `event: stderr` (`data: {"command", "text"}`, a chunk of that command's stream,
    cut at character boundaries), `event: exit` (`data: {"command", "exitCode", "timedOut",
    "stdoutTruncated", "stderrTruncated"}`: a stream cut at its 1 MiB bound says so here), each with
    `id:` its position; then `event: end` with the run as `GET /v1/runs/{runId}` answers it, and the
    stream closes. A comment `heartbeat` is sent while nothing happens.

    Args:
        run_id (str):
        owner_user_id (str | Unset): The user the workspace belongs to.
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | RunStreamEvent
     """


    return sync_detailed(
        run_id=run_id,
client=client,
owner_user_id=owner_user_id,
last_event_id=last_event_id,

    ).parsed

async def asyncio_detailed(
    run_id: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> Response[ErrorBody | RunStreamEvent]:
    """ The run's output as it happens (Server-Sent Events).

     The run's output as it happens, as Server-Sent Events, from the start or after `Last-Event-ID`:
    `event: stdout` and `event: stderr` (`data: {"command", "text"}`, a chunk of that command's stream,
    cut at character boundaries), `event: exit` (`data: {"command", "exitCode", "timedOut",
    "stdoutTruncated", "stderrTruncated"}`: a stream cut at its 1 MiB bound says so here), each with
    `id:` its position; then `event: end` with the run as `GET /v1/runs/{runId}` answers it, and the
    stream closes. A comment `heartbeat` is sent while nothing happens.

    Args:
        run_id (str):
        owner_user_id (str | Unset): The user the workspace belongs to.
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | RunStreamEvent]
     """


    kwargs = _get_kwargs(
        run_id=run_id,
owner_user_id=owner_user_id,
last_event_id=last_event_id,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    run_id: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> ErrorBody | RunStreamEvent | None:
    """ The run's output as it happens (Server-Sent Events).

     The run's output as it happens, as Server-Sent Events, from the start or after `Last-Event-ID`:
    `event: stdout` and `event: stderr` (`data: {"command", "text"}`, a chunk of that command's stream,
    cut at character boundaries), `event: exit` (`data: {"command", "exitCode", "timedOut",
    "stdoutTruncated", "stderrTruncated"}`: a stream cut at its 1 MiB bound says so here), each with
    `id:` its position; then `event: end` with the run as `GET /v1/runs/{runId}` answers it, and the
    stream closes. A comment `heartbeat` is sent while nothing happens.

    Args:
        run_id (str):
        owner_user_id (str | Unset): The user the workspace belongs to.
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | RunStreamEvent
     """


    return (await asyncio_detailed(
        run_id=run_id,
client=client,
owner_user_id=owner_user_id,
last_event_id=last_event_id,

    )).parsed
