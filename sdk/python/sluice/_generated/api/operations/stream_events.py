from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    since: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(last_event_id, Unset):
        headers["Last-Event-ID"] = last_event_id



    

    params: dict[str, Any] = {}

    params["since"] = since


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/events/stream",
        "params": params,
    }


    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | str | None:
    if response.status_code == 200:
        response_200 = response.text
        return response_200

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 503:
        response_503 = ErrorBody.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | str]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    since: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> Response[ErrorBody | str]:
    """ Every workspace's events, in the order they were recorded (an
    operators' stream).

     Every workspace's events and sluice's own (types starting `sluice.`: drain changes, retention,
    recovery attempts, captures registered, gateway sessions, webhooks disabled; they carry no
    `sequence`) in the order they became durable, then each new one, as Server-Sent Events: `id:` is a
    feed cursor (`TX.POSITION`), `event:` the type, `data:` the event. Resumes after `Last-Event-ID` (or
    `since`) with no gap and no repeat, on any API instance and across restarts. A comment `heartbeat`
    is sent while nothing happens.

    Args:
        since (str | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | str]
     """


    kwargs = _get_kwargs(
        since=since,
last_event_id=last_event_id,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    since: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> ErrorBody | str | None:
    """ Every workspace's events, in the order they were recorded (an
    operators' stream).

     Every workspace's events and sluice's own (types starting `sluice.`: drain changes, retention,
    recovery attempts, captures registered, gateway sessions, webhooks disabled; they carry no
    `sequence`) in the order they became durable, then each new one, as Server-Sent Events: `id:` is a
    feed cursor (`TX.POSITION`), `event:` the type, `data:` the event. Resumes after `Last-Event-ID` (or
    `since`) with no gap and no repeat, on any API instance and across restarts. A comment `heartbeat`
    is sent while nothing happens.

    Args:
        since (str | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | str
     """


    return sync_detailed(
        client=client,
since=since,
last_event_id=last_event_id,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    since: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> Response[ErrorBody | str]:
    """ Every workspace's events, in the order they were recorded (an
    operators' stream).

     Every workspace's events and sluice's own (types starting `sluice.`: drain changes, retention,
    recovery attempts, captures registered, gateway sessions, webhooks disabled; they carry no
    `sequence`) in the order they became durable, then each new one, as Server-Sent Events: `id:` is a
    feed cursor (`TX.POSITION`), `event:` the type, `data:` the event. Resumes after `Last-Event-ID` (or
    `since`) with no gap and no repeat, on any API instance and across restarts. A comment `heartbeat`
    is sent while nothing happens.

    Args:
        since (str | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | str]
     """


    kwargs = _get_kwargs(
        since=since,
last_event_id=last_event_id,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    since: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> ErrorBody | str | None:
    """ Every workspace's events, in the order they were recorded (an
    operators' stream).

     Every workspace's events and sluice's own (types starting `sluice.`: drain changes, retention,
    recovery attempts, captures registered, gateway sessions, webhooks disabled; they carry no
    `sequence`) in the order they became durable, then each new one, as Server-Sent Events: `id:` is a
    feed cursor (`TX.POSITION`), `event:` the type, `data:` the event. Resumes after `Last-Event-ID` (or
    `since`) with no gap and no repeat, on any API instance and across restarts. A comment `heartbeat`
    is sent while nothing happens.

    Args:
        since (str | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | str
     """


    return (await asyncio_detailed(
        client=client,
since=since,
last_event_id=last_event_id,

    )).parsed
