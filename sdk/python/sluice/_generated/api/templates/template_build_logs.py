from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.build_log_line import BuildLogLine
from ...models.error_body import ErrorBody
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    name: str,
    build_id: str,
    *,
    follow: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(last_event_id, Unset):
        headers["Last-Event-ID"] = last_event_id



    

    params: dict[str, Any] = {}

    params["follow"] = follow


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/templates/{name}/builds/{build_id}/logs".format(name=quote(str(name), safe=""),build_id=quote(str(build_id), safe=""),),
        "params": params,
    }


    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> BuildLogLine | ErrorBody | None:
    if response.status_code == 200:
        response_200 = BuildLogLine.from_dict(response.text)



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

    if response.status_code == 500:
        response_500 = ErrorBody.from_dict(response.json())



        return response_500

    if response.status_code == 503:
        response_503 = ErrorBody.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[BuildLogLine | ErrorBody]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    name: str,
    build_id: str,
    *,
    client: AuthenticatedClient,
    follow: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> Response[BuildLogLine | ErrorBody]:
    """ A build's output (Server-Sent Events).

     The build's output after `Last-Event-ID` (a line number; from the first line when absent) as Server-
    Sent Events: `event: log` with `data: {"text"}` and `id:` the line's number; with `follow=true` each
    new line as it comes, then `event: ended` (`data:` the build) once it has ended, and the stream
    closes. Without `follow` the stream closes once what is kept was sent. Each build keeps up to 1 MiB
    of output.

    Args:
        name (str):
        build_id (str):
        follow (str | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BuildLogLine | ErrorBody]
     """


    kwargs = _get_kwargs(
        name=name,
build_id=build_id,
follow=follow,
last_event_id=last_event_id,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    name: str,
    build_id: str,
    *,
    client: AuthenticatedClient,
    follow: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> BuildLogLine | ErrorBody | None:
    """ A build's output (Server-Sent Events).

     The build's output after `Last-Event-ID` (a line number; from the first line when absent) as Server-
    Sent Events: `event: log` with `data: {"text"}` and `id:` the line's number; with `follow=true` each
    new line as it comes, then `event: ended` (`data:` the build) once it has ended, and the stream
    closes. Without `follow` the stream closes once what is kept was sent. Each build keeps up to 1 MiB
    of output.

    Args:
        name (str):
        build_id (str):
        follow (str | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BuildLogLine | ErrorBody
     """


    return sync_detailed(
        name=name,
build_id=build_id,
client=client,
follow=follow,
last_event_id=last_event_id,

    ).parsed

async def asyncio_detailed(
    name: str,
    build_id: str,
    *,
    client: AuthenticatedClient,
    follow: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> Response[BuildLogLine | ErrorBody]:
    """ A build's output (Server-Sent Events).

     The build's output after `Last-Event-ID` (a line number; from the first line when absent) as Server-
    Sent Events: `event: log` with `data: {"text"}` and `id:` the line's number; with `follow=true` each
    new line as it comes, then `event: ended` (`data:` the build) once it has ended, and the stream
    closes. Without `follow` the stream closes once what is kept was sent. Each build keeps up to 1 MiB
    of output.

    Args:
        name (str):
        build_id (str):
        follow (str | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BuildLogLine | ErrorBody]
     """


    kwargs = _get_kwargs(
        name=name,
build_id=build_id,
follow=follow,
last_event_id=last_event_id,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    name: str,
    build_id: str,
    *,
    client: AuthenticatedClient,
    follow: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> BuildLogLine | ErrorBody | None:
    """ A build's output (Server-Sent Events).

     The build's output after `Last-Event-ID` (a line number; from the first line when absent) as Server-
    Sent Events: `event: log` with `data: {"text"}` and `id:` the line's number; with `follow=true` each
    new line as it comes, then `event: ended` (`data:` the build) once it has ended, and the stream
    closes. Without `follow` the stream closes once what is kept was sent. Each build keeps up to 1 MiB
    of output.

    Args:
        name (str):
        build_id (str):
        follow (str | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BuildLogLine | ErrorBody
     """


    return (await asyncio_detailed(
        name=name,
build_id=build_id,
client=client,
follow=follow,
last_event_id=last_event_id,

    )).parsed
