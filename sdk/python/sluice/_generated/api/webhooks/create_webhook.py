from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.create_webhook_request import CreateWebhookRequest
from ...models.create_webhook_response import CreateWebhookResponse
from ...models.error_body import ErrorBody
from typing import cast



def _get_kwargs(
    *,
    body: CreateWebhookRequest,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/webhooks",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> CreateWebhookResponse | ErrorBody | None:
    if response.status_code == 201:
        response_201 = CreateWebhookResponse.from_dict(response.json())



        return response_201

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 413:
        response_413 = ErrorBody.from_dict(response.json())



        return response_413

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[CreateWebhookResponse | ErrorBody]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: CreateWebhookRequest,

) -> Response[CreateWebhookResponse | ErrorBody]:
    """ Registers an endpoint. It receives the events recorded from now on.

     Registers an endpoint that receives every event recorded from now on whose type its `events` name,
    as a POST of `{type, timestamp, data}` signed the Standard Webhooks way (`webhook-id` is the event's
    id, the same on every try; `webhook-timestamp`; `webhook-signature: v1,…`, HMAC-SHA256 of
    `id.timestamp.body`). Each event is delivered at least once, in feed order: a failure is retried
    after a pause that doubles, and a run of failures disables the endpoint, recorded as
    `sluice.webhook.disabled`.

    Args:
        body (CreateWebhookRequest): A webhook endpoint to register.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CreateWebhookResponse | ErrorBody]
     """


    kwargs = _get_kwargs(
        body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    body: CreateWebhookRequest,

) -> CreateWebhookResponse | ErrorBody | None:
    """ Registers an endpoint. It receives the events recorded from now on.

     Registers an endpoint that receives every event recorded from now on whose type its `events` name,
    as a POST of `{type, timestamp, data}` signed the Standard Webhooks way (`webhook-id` is the event's
    id, the same on every try; `webhook-timestamp`; `webhook-signature: v1,…`, HMAC-SHA256 of
    `id.timestamp.body`). Each event is delivered at least once, in feed order: a failure is retried
    after a pause that doubles, and a run of failures disables the endpoint, recorded as
    `sluice.webhook.disabled`.

    Args:
        body (CreateWebhookRequest): A webhook endpoint to register.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CreateWebhookResponse | ErrorBody
     """


    return sync_detailed(
        client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: CreateWebhookRequest,

) -> Response[CreateWebhookResponse | ErrorBody]:
    """ Registers an endpoint. It receives the events recorded from now on.

     Registers an endpoint that receives every event recorded from now on whose type its `events` name,
    as a POST of `{type, timestamp, data}` signed the Standard Webhooks way (`webhook-id` is the event's
    id, the same on every try; `webhook-timestamp`; `webhook-signature: v1,…`, HMAC-SHA256 of
    `id.timestamp.body`). Each event is delivered at least once, in feed order: a failure is retried
    after a pause that doubles, and a run of failures disables the endpoint, recorded as
    `sluice.webhook.disabled`.

    Args:
        body (CreateWebhookRequest): A webhook endpoint to register.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CreateWebhookResponse | ErrorBody]
     """


    kwargs = _get_kwargs(
        body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    body: CreateWebhookRequest,

) -> CreateWebhookResponse | ErrorBody | None:
    """ Registers an endpoint. It receives the events recorded from now on.

     Registers an endpoint that receives every event recorded from now on whose type its `events` name,
    as a POST of `{type, timestamp, data}` signed the Standard Webhooks way (`webhook-id` is the event's
    id, the same on every try; `webhook-timestamp`; `webhook-signature: v1,…`, HMAC-SHA256 of
    `id.timestamp.body`). Each event is delivered at least once, in feed order: a failure is retried
    after a pause that doubles, and a run of failures disables the endpoint, recorded as
    `sluice.webhook.disabled`.

    Args:
        body (CreateWebhookRequest): A webhook endpoint to register.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CreateWebhookResponse | ErrorBody
     """


    return (await asyncio_detailed(
        client=client,
body=body,

    )).parsed
